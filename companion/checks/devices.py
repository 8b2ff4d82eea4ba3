"""Self-checks for lesson 11: any tensor to NumPy (bfloat16 and gradients included), and a whole batch to a device.

On a machine without a GPU, `to_numpy` is tried on stand-ins for accelerator tensors (`_OnAccelerator`): CPU tensors
that report `cuda:0` and refuse `.numpy()` until they are copied with `.cpu()` or `.to("cpu")`, as a real GPU tensor
does. The checks run the learner's function and look at what comes back; they never read its source.
"""

from collections.abc import Callable

import numpy as np
import torch

from companion.devices import pick_device
from companion.exercises import Exercise, Mistake, WrongAnswer, passed, require

_GPU = torch.device("cuda", 0)
_REFUSAL = "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."


class _OnAccelerator(torch.Tensor):
    """A CPU tensor that acts, for `.numpy()`, like one on a GPU: it reports cuda:0 and must be copied to the CPU."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func == torch.Tensor.device.__get__:
            return _GPU
        if func is torch.Tensor.numpy and not (kwargs.get("force") or (len(args) > 1 and args[1])):
            raise TypeError(_REFUSAL)
        result = super().__torch_function__(func, types, args, kwargs)
        copied = func is torch.Tensor.cpu or (func is torch.Tensor.to and _to_the_cpu(args[1:], kwargs))
        return result.as_subclass(torch.Tensor) if copied and isinstance(result, cls) else result


def _to_the_cpu(args: tuple, kwargs: dict) -> bool:
    """Whether the arguments of `.to(...)` name the CPU."""
    target = kwargs.get("device", args[0] if args else None)
    return isinstance(target, str | torch.device) and torch.device(target).type == "cpu"


# Exercise 1: to_numpy ------------------------------------------------------------------------------------------------


def _tensor_cases(device: torch.device) -> list[tuple[str, torch.Tensor]]:
    """Tensors `to_numpy` must handle, built on the CPU (the same numbers everywhere), then put on `device`."""
    generator = torch.Generator().manual_seed(8)

    def on_device(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.as_subclass(_OnAccelerator) if device.type == "cpu" else tensor.to(device)

    weight = on_device(torch.randn(2, 3, generator=generator)).requires_grad_()
    half_weight = on_device(torch.randn(3, generator=generator).bfloat16()).requires_grad_()
    return [
        ("a float32 tensor of shape (2, 3)", on_device(torch.randn(2, 3, generator=generator))),
        ("a tensor that requires grad", weight),
        ("a model output (it has a grad_fn)", weight * 2),
        ("int64 labels", on_device(torch.randint(0, 10, (5,), generator=generator))),
        ("a bool mask", on_device(torch.randn(4, generator=generator) > 0)),
        ("a float16 tensor", on_device(torch.randn(3, generator=generator).half())),
        ("bfloat16 weights that require grad", half_weight),
        ("a 0-d loss", (weight**2).mean()),
        ("an empty tensor of shape (0, 4)", on_device(torch.zeros(0, 4))),
    ]


def _expected(tensor: torch.Tensor) -> np.ndarray:
    """The right answer: the values on the CPU, bfloat16 widened to float32 (exact; NumPy has no bfloat16)."""
    plain = tensor.detach().cpu()
    return (plain.float() if plain.dtype == torch.bfloat16 else plain).numpy()


def _hint_for(error: Exception) -> tuple[str, str]:
    """A hint, in both languages, for the error a learner's to_numpy raised."""
    message = str(error)
    if isinstance(error, NotImplementedError):
        return "write the body of to_numpy first", "先把 to_numpy 的函数体写出来"
    if "requires grad" in message:
        return "cut it from autograd first with .detach()", "先用 .detach() 把它从自动求导中分离出来"
    if "device type tensor to numpy" in message:
        return "copy it to the CPU first with .cpu()", "先用 .cpu() 把它复制到 CPU 上"
    if "BFloat16" in message:
        return (
            "NumPy has no bfloat16: widen it with .float() before .numpy()",
            "NumPy 没有 bfloat16 类型：调用 .numpy() 之前先用 .float() 转成 float32",
        )
    if "converted to Scalar" in message:
        return (
            ".item() gives one number; .numpy() works for any shape",
            ".item() 只能取出一个数；.numpy() 适用于任何形状",
        )
    return "see the error above", "请看上面的报错"


def check_to_numpy(to_numpy: Callable[[torch.Tensor], np.ndarray]) -> None:
    """`to_numpy(t)` must give t's values as a NumPy array for any tensor, grad, device or bfloat16."""
    require(
        callable(to_numpy),
        "Pass the function itself: check_to_numpy(to_numpy), without ().",
        "把函数本身传进去：check_to_numpy(to_numpy)，不要加 ()。",
    )
    cases = _tensor_cases(pick_device())
    for what, tensor in cases:
        requires_grad, want = tensor.requires_grad, _expected(tensor)
        where = f"to_numpy({what})"
        try:
            got = to_numpy(tensor)
        except Exception as error:  # turn the learner's error into a hint that names the missing step
            hint, hint_zh = _hint_for(error)
            first_line = str(error).splitlines()[0] if str(error) else ""
            raise WrongAnswer(
                f"{where} raised {type(error).__name__}: {first_line} ({hint}).\n提示：{where} 报错（{hint_zh}）。"
            ) from error
        require(
            isinstance(got, np.ndarray),
            f"{where} returned a {type(got).__name__}, not a NumPy array: end with .numpy() (a tensor, .tolist() or "
            ".item() is not one).",
            f"{where} 返回的是 {type(got).__name__}，不是 NumPy 数组：最后要调用 .numpy()（张量、.tolist() 和 .item() "
            "的结果都不是 NumPy 数组）。",
        )
        require(
            got.shape == want.shape,
            f"{where} has shape {got.shape}, expected {want.shape}: keep the shape.",
            f"{where} 的形状是 {got.shape}，应为 {want.shape}：不要改变形状。",
        )
        require(
            not (want.dtype == np.float16 and got.dtype != np.float16),
            f"{where} is {got.dtype}: NumPy has float16, so keep it; only bfloat16 needs widening.",
            f"{where} 的数据类型是 {got.dtype}：NumPy 有 float16，应保持不变；只有 bfloat16 需要转换。",
        )
        require(
            got.dtype == want.dtype,
            f"{where} is {got.dtype}, expected {want.dtype}: keep the data type (only bfloat16 becomes float32).",
            f"{where} 的数据类型是 {got.dtype}，应为 {want.dtype}：保持数据类型不变（只有 bfloat16 要转成 float32）。",
        )
        require(
            np.array_equal(got, want),
            f"{where} holds other values than the tensor: do not change them.",
            f"{where} 的数值和张量不一样：不要改动数值。",
        )
        require(
            tensor.requires_grad == requires_grad,
            f"{where} changed the caller's tensor: .detach() makes a new view, requires_grad_(False) does not.",
            f"{where} 改动了调用者的张量：.detach() 会得到一个新的视图，requires_grad_(False) 则是直接修改原张量。",
        )
    passed(
        f"to_numpy gives the right array for {len(cases)} kinds of tensor: gradients, bfloat16 and devices included",
        f"to_numpy 对 {len(cases)} 种张量都给出了正确的数组，包括需要梯度的、bfloat16 的和不在 CPU 上的",
    )


def _reference_to_numpy(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _to_numpy_without_detach(t):
    t = t.cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _to_numpy_without_cpu(t):
    t = t.detach()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _to_numpy_as_in_the_lesson(t):
    return t.detach().cpu().numpy()


def _to_numpy_always_float(t):
    return t.detach().cpu().float().numpy()


def _to_numpy_widening_every_half(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype in (torch.bfloat16, torch.float16) else t).numpy()


def _to_numpy_unhooking_the_caller(t):
    t = t.requires_grad_(False) if t.is_leaf else t.detach()
    t = t.cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _to_numpy_as_a_tensor(t):
    return t.detach().cpu().float()


# Exercise 2: to_device -----------------------------------------------------------------------------------------------


def _batch() -> dict:
    """A batch as a data loader might give it: tensors in a dict, a list and a tuple, nested, beside plain values."""
    generator = torch.Generator().manual_seed(11)
    return {
        "images": torch.rand(2, 1, 8, 8, generator=generator),
        "labels": torch.tensor([3, 7]),
        "extra": {"masks": [torch.tensor([True, False]), torch.tensor([False, True])], "source": "digits"},
        "lengths": (torch.tensor([8, 8]), 2),
    }


def _leaves(batch: object, path: str = "batch") -> list[tuple[str, object]]:
    """(where, value) for every value in a nested batch that is not a dict, list or tuple."""
    if isinstance(batch, dict):
        return [leaf for key, value in batch.items() for leaf in _leaves(value, f"{path}[{key!r}]")]
    if isinstance(batch, list | tuple):
        return [leaf for i, value in enumerate(batch) for leaf in _leaves(value, f"{path}[{i}]")]
    return [(path, batch)]


def _same_structure(got: object, want: object, path: str = "batch") -> None:
    """Raise WrongAnswer, naming where, unless `got` nests dicts, lists and tuples exactly as `want` does."""
    if isinstance(want, dict | list | tuple):
        require(
            type(got) is type(want),
            f"{path} came back as a {type(got).__name__}, not a {type(want).__name__}: keep tuples as tuples and "
            "lists as lists (build the same type: type(batch)(...)).",
            f"{path} 返回成了 {type(got).__name__}，而不是 {type(want).__name__}：元组仍要是元组，列表仍要是列表"
            "（用 type(batch)(...) 构造同一种类型）。",
        )
        keys = list(want) if isinstance(want, dict) else range(len(want))
        require(
            len(got) == len(want) and (not isinstance(want, dict) or list(got) == list(want)),
            f"{path} has other keys or another length than the batch: keep every entry.",
            f"{path} 的键或长度和原来的批不一样：每一项都要保留。",
        )
        for key in keys:
            _same_structure(got[key], want[key], f"{path}[{key!r}]")


def check_to_device(to_device: Callable[[object, torch.device], object]) -> None:
    """`to_device(batch, device)` must move every tensor of a nested batch to `device` and keep everything else."""
    require(
        callable(to_device),
        "Pass the function itself: check_to_device(to_device), without ().",
        "把函数本身传进去：check_to_device(to_device)，不要加 ()。",
    )
    for device in (torch.device("cpu"), torch.device("meta")):  # meta: every machine has it, so every move shows
        batch = _batch()
        try:
            got = to_device(batch, device)
        except AttributeError as error:
            raise WrongAnswer(
                f"to_device raised AttributeError: {error} (only tensors have .to: leave what is not a tensor "
                "as it is, such as the string 'digits' and the int 2).\n"
                f"提示：to_device 报错 AttributeError（只有张量才有 .to：不是张量的值，比如字符串 'digits' 和整数 2，"
                "原样保留）。"
            ) from error
        _same_structure(got, batch)
        for (where, value), (_, original) in zip(_leaves(got), _leaves(_batch()), strict=True):
            if not isinstance(original, torch.Tensor):
                require(
                    value == original,
                    f"{where} is {value!r}, expected {original!r}: leave values that are not tensors as they are.",
                    f"{where} 变成了 {value!r}，应为 {original!r}：不是张量的值要原样保留。",
                )
                continue
            require(
                isinstance(value, torch.Tensor) and value.device.type == device.type,
                f"{where} is still on {getattr(value, 'device', 'no device')}, not on {device}: "
                + (
                    "`.to` returns a new tensor and leaves the old one where it was; keep what it returns."
                    if where.count("[") == 1
                    else "the tensors inside nested dicts, lists and tuples must move too: call to_device on each "
                    "entry (recursively)."
                ),
                f"{where} 仍在 {getattr(value, 'device', '无设备')} 上，没有搬到 {device}："
                + (
                    "`.to` 返回一个新张量，原来的张量留在原处；要接住它返回的张量。"
                    if where.count("[") == 1
                    else "嵌套在字典、列表和元组里面的张量也要搬过去：对每一项递归地调用 to_device。"
                ),
            )
            require(
                value.dtype == original.dtype and value.shape == original.shape,
                f"{where} is {value.dtype} of shape {tuple(value.shape)}, expected {original.dtype} of shape "
                f"{tuple(original.shape)}: pass only the device to .to, keep the data type.",
                f"{where} 是形状为 {tuple(value.shape)} 的 {value.dtype}，应为形状 {tuple(original.shape)} 的 "
                f"{original.dtype}：.to 只传设备，数据类型保持不变。",
            )
            if device.type == "cpu":
                require(
                    torch.equal(value, original),
                    f"{where} holds other values than the batch: move the tensors, do not change them.",
                    f"{where} 的数值和原来的批不一样：只搬动张量，不要改动数值。",
                )
        require(
            all(v.device.type == "cpu" for _, v in _leaves(batch) if isinstance(v, torch.Tensor)),
            "to_device changed the caller's batch: build a new dict, list or tuple instead of assigning into it.",
            "to_device 改动了调用者传进来的批：应当新建字典、列表或元组，而不是往原来的里面赋值。",
        )
    passed(
        "to_device moves every tensor of a nested batch and keeps its structure, data types and plain values",
        "to_device 搬动了嵌套批中的每一个张量，结构、数据类型和非张量的值都保持不变",
    )


def _reference_to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: _reference_to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(_reference_to_device(value, device) for value in batch)
    return batch


def _to_device_keeping_the_old_tensors(batch, device):
    for value in batch.values():
        if isinstance(value, torch.Tensor):
            value.to(device)  # the moved copy is thrown away
    return batch


def _to_device_top_level_only(batch, device):
    return {key: value.to(device) if isinstance(value, torch.Tensor) else value for key, value in batch.items()}


def _to_device_calling_to_on_everything(batch, device):
    if isinstance(batch, dict):
        return {key: _to_device_calling_to_on_everything(value, device) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(_to_device_calling_to_on_everything(value, device) for value in batch)
    return batch.to(device)


def _to_device_tuples_to_lists(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: _to_device_tuples_to_lists(value, device) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return [_to_device_tuples_to_lists(value, device) for value in batch]
    return batch


def _to_device_as_float32(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, torch.float32)
    if isinstance(batch, dict):
        return {key: _to_device_as_float32(value, device) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(_to_device_as_float32(value, device) for value in batch)
    return batch


EXERCISES = [
    Exercise(
        check=check_to_numpy,
        reference=_reference_to_numpy,
        mistakes=(
            Mistake("no .detach() (a tensor that requires grad)", _to_numpy_without_detach, ".detach()"),
            Mistake("no .cpu() (a tensor on an accelerator)", _to_numpy_without_cpu, "copy it to the CPU first"),
            Mistake("the lesson's line, which bfloat16 refuses", _to_numpy_as_in_the_lesson, "NumPy has no bfloat16"),
            Mistake("every tensor made float32", _to_numpy_always_float, "only bfloat16 becomes float32"),
            Mistake("float16 widened too", _to_numpy_widening_every_half, "NumPy has float16"),
            Mistake(
                "requires_grad_(False) on the caller's tensor", _to_numpy_unhooking_the_caller, "changed the caller"
            ),
            Mistake("a tensor returned, not an array", _to_numpy_as_a_tensor, "not a NumPy array"),
        ),
        why="detach() leaves the graph, cpu() copies from the accelerator (and is free on the CPU), and bfloat16, "
        "which NumPy lacks, widens to float32 without rounding.",
        why_zh="detach() 脱离计算图，cpu() 从加速器上复制回来（在 CPU 上不花代价），而 NumPy 没有的 bfloat16 "
        "可以无损地转成 float32。",
        discuss="On the CPU the returned array shares memory with the tensor, on a GPU it does not. When does that "
        "matter, and what would you add to make the two behave alike?",
        discuss_zh="在 CPU 上，返回的数组和张量共享内存；在 GPU 上则不共享。这在什么时候会出问题？"
        "怎样改才能让两者表现一致？",
    ),
    Exercise(
        check=check_to_device,
        reference=_reference_to_device,
        mistakes=(
            Mistake("calls .to but keeps the old tensors", _to_device_keeping_the_old_tensors, "keep what it returns"),
            Mistake("moves the top level only", _to_device_top_level_only, "(recursively)"),
            Mistake("calls .to on a string", _to_device_calling_to_on_everything, "only tensors have .to"),
            Mistake("turns tuples into lists", _to_device_tuples_to_lists, "keep tuples as tuples"),
            Mistake("also changes the data type", _to_device_as_float32, "keep the data type"),
        ),
        why="A tensor's .to returns the moved tensor and leaves the original alone, so a batch is rebuilt, entry by "
        "entry, from what .to returns.",
        why_zh="张量的 .to 返回搬动后的新张量，原张量不动；所以要用 .to 的返回值，逐项重新构造这个批。",
        discuss="A model moves in place with model.to(device); a batch does not. Why is it designed that way?",
        discuss_zh="模型用 model.to(device) 就地搬动，批却不行。为什么要这样设计？",
    ),
]
