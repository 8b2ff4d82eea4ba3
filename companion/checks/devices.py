"""Self-checks for lesson 11: any tensor to NumPy (bfloat16 and gradients included), and a whole batch to a device.

On a machine without a GPU, `to_numpy` is tried on stand-ins for accelerator tensors (`_OnAccelerator`): CPU tensors
that say everywhere that they live on `cuda:0` (`.device`, `.is_cuda`, `.is_cpu`, `.get_device()`) and refuse
`.numpy()` until they are copied with `.cpu()` or `.to("cpu")`, as a real GPU tensor does. The checks run the
learner's function inside the harness (global state left as found, the caller's tensors and batch not changed) and
look at what comes back; they never read its source.
"""

import copy
from collections.abc import Callable

import numpy as np
import torch

from companion._torch_errors import ITEM_NEEDS_ONE_VALUE, NUMPY_NEEDS_CPU, NUMPY_NEEDS_DETACH, NUMPY_NO_BFLOAT16, says
from companion.devices import pick_device
from companion.exercises import WrongAnswer, hint_text, passed, require, sandbox
from companion.language import in_language

_GPU = torch.device("cuda", 0)
_REFUSAL = "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
# What a tensor on cuda:0 answers to these questions; the stand-in gives the same answers.
_LIKE_A_GPU = {
    torch.Tensor.device.__get__: _GPU,
    torch.Tensor.is_cuda.__get__: True,
    torch.Tensor.is_cpu.__get__: False,
    torch.Tensor.get_device: 0,
}


class _OnAccelerator(torch.Tensor):
    """A CPU tensor that acts like one on a GPU: `.device`, `.is_cuda`, `.is_cpu` and `.get_device()` all say
    cuda:0, `.numpy()` refuses it (unless force=True), and only `.cpu()` or `.to` the CPU give a plain CPU tensor."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for question, answer in _LIKE_A_GPU.items():
            if func == question:
                return answer
        if func is torch.Tensor.numpy and not (kwargs.get("force") or (len(args) > 1 and args[1])):
            raise TypeError(_REFUSAL)
        result = super().__torch_function__(func, types, args, kwargs)
        copied = func is torch.Tensor.cpu or (func is torch.Tensor.to and _to_the_cpu(args[1:], kwargs))
        return result.as_subclass(torch.Tensor) if copied and isinstance(result, cls) else result


def _to_the_cpu(args: tuple, kwargs: dict) -> bool:
    """Whether the arguments of `.to(...)` name the CPU (a device, its name, or a tensor that lives there)."""
    target = kwargs.get("device", args[0] if args else None)
    if isinstance(target, torch.Tensor):
        return target.device.type == "cpu"
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
        # transposed, so not contiguous: the array must still read row by row as the tensor does
        ("a float32 tensor of shape (2, 3)", on_device(torch.randn(3, 2, generator=generator)).t()),
        ("a tensor that requires grad", weight),
        ("a model output (it has a grad_fn)", weight * 2),
        ("int64 labels", on_device(torch.randint(0, 10, (5,), generator=generator))),
        ("a bool mask", on_device(torch.randn(4, generator=generator) > 0)),
        ("a float16 tensor", on_device(torch.randn(3, generator=generator).half())),
        ("bfloat16 weights that require grad", half_weight),
        ("a 0-d loss", (weight**2).mean()),
        ("an empty tensor of shape (0, 4)", on_device(torch.zeros(0, 4))),
    ]


# Each case of _tensor_cases in Chinese, for the Chinese hints.
_WHAT_ZH = {
    "a float32 tensor of shape (2, 3)": "形状为 (2, 3) 的 float32 张量",
    "a tensor that requires grad": "需要梯度的张量",
    "a model output (it has a grad_fn)": "模型的输出（它有 grad_fn）",
    "int64 labels": "int64 标签",
    "a bool mask": "bool 掩码",
    "a float16 tensor": "float16 张量",
    "bfloat16 weights that require grad": "需要梯度的 bfloat16 权重",
    "a 0-d loss": "0 维的损失",
    "an empty tensor of shape (0, 4)": "形状为 (0, 4) 的空张量",
}


def _expected(tensor: torch.Tensor) -> np.ndarray:
    """What the array must hold, computed apart from the lesson's line: NumPy's dtype for each torch dtype (bfloat16,
    which NumPy lacks, as float32: exact), the values read one by one, never a view of the caller's memory."""
    plain = tensor.detach().as_subclass(torch.Tensor).to("cpu", copy=True)
    dtype = {torch.bfloat16: np.float32, torch.float16: np.float16, torch.bool: np.bool_}.get(plain.dtype)
    if dtype is None:
        dtype = torch.empty(0, dtype=plain.dtype).numpy().dtype
    values = plain.to(torch.float32) if plain.dtype == torch.bfloat16 else plain
    return np.array(values.tolist(), dtype=dtype).reshape(tuple(plain.shape))


def _snapshot(tensor: torch.Tensor) -> tuple:
    """Everything about the caller's tensor that to_numpy must leave alone."""
    grad = tensor.grad if tensor.is_leaf else None  # only a leaf has a .grad of its own
    return (
        tensor.dtype,
        tuple(tensor.shape),
        tensor.requires_grad,
        tensor.grad_fn,
        tensor.detach().as_subclass(torch.Tensor).clone(),
        None if grad is None else grad.detach().as_subclass(torch.Tensor).clone(),
    )


def _same_snapshot(a: tuple, b: tuple) -> bool:
    (*a_plain, a_values, a_grad), (*b_plain, b_values, b_grad) = a, b
    same_grad = (a_grad is None) == (b_grad is None) and (a_grad is None or torch.equal(a_grad, b_grad))
    return a_plain == b_plain and a_values.dtype == b_values.dtype and torch.equal(a_values, b_values) and same_grad


def _hint_for(error: Exception) -> tuple[str, str]:
    """A hint, in both languages, for the error a learner's to_numpy raised."""
    if isinstance(error, NotImplementedError):
        return "write the body of to_numpy first", "先把 to_numpy 的函数体写出来"
    if says(error, NUMPY_NEEDS_DETACH):
        return "cut it from autograd first with .detach()", "先用 .detach() 把它从自动求导中分离出来"
    if says(error, NUMPY_NEEDS_CPU):
        return "copy it to the CPU first with .cpu()", "先用 .cpu() 把它复制到 CPU 上"
    if says(error, NUMPY_NO_BFLOAT16):
        return (
            "NumPy has no bfloat16: widen it with .float() before .numpy()",
            "NumPy 没有 bfloat16 类型：调用 .numpy() 之前先用 .float() 转成 float32",
        )
    if says(error, ITEM_NEEDS_ONE_VALUE):
        return (
            ".item() gives one number; .numpy() works for any shape",
            ".item() 只能取出一个数；.numpy() 适用于任何形状",
        )
    return "see the error above", "请看上面的报错"


def _call_to_numpy(to_numpy: Callable, tensor: torch.Tensor, where: str, where_zh: str) -> object:
    """Run the learner's to_numpy in the harness's sandbox; turn an error into a hint that names the missing step."""
    try:
        with sandbox():
            return to_numpy(tensor)
    except WrongAnswer:
        raise
    except Exception as error:
        hint, hint_zh = _hint_for(error)
        first_line = str(error).splitlines()[0] if str(error) else ""
        raise WrongAnswer(
            hint_text(
                f"{where} raised {type(error).__name__}: {first_line} ({hint}).", f"{where_zh} 报错（{hint_zh}）。"
            )
        ) from error


def check_to_numpy(to_numpy: Callable[[torch.Tensor], np.ndarray]) -> None:
    """`to_numpy(t)` must give t's values as a NumPy array for any tensor, grad, device or bfloat16, and leave the
    caller's tensor as it was."""
    require(
        callable(to_numpy),
        "Pass the function itself: check_to_numpy(to_numpy), without ().",
        "把函数本身传进去：check_to_numpy(to_numpy)，不要加 ()。",
    )
    cases = _tensor_cases(pick_device())
    for what, tensor in cases:
        before, want = _snapshot(tensor), _expected(tensor)
        # The English one in the bilingual hint too, as it always was; the Chinese edition's own in Chinese.
        where = f"to_numpy({what})"
        where_zh = in_language(where, f"to_numpy({_WHAT_ZH[what]})")
        got = _call_to_numpy(to_numpy, tensor, where, where_zh)
        after = _snapshot(tensor)
        require(
            after[2] == before[2] and after[3] is before[3],
            f"{where} changed the caller's tensor: it no longer requires grad. .detach() makes a new view, "
            "requires_grad_(False) does not.",
            f"{where_zh} 改动了调用者的张量：它不再需要梯度了。.detach() 会得到一个新的视图，"
            "requires_grad_(False) 则是直接修改原张量。",
        )
        require(
            _same_snapshot(before, after),
            f"{where} changed the caller's tensor (its data type was {before[0]}, now {after[0]}; or its values or "
            ".grad): assigning to t.data or writing in place reaches the caller's tensor. Build new tensors "
            "(t.float(), t.detach()) and leave t alone.",
            f"{where_zh} 改动了调用者的张量（数据类型原为 {before[0]}，现为 {after[0]}；或者数值、.grad 变了）："
            "给 t.data 赋值或原地写入都会改到调用者的张量。请构造新的张量（t.float()、t.detach()），不要动 t 本身。",
        )
        require(
            isinstance(got, np.ndarray),
            f"{where} returned a {type(got).__name__}, not a NumPy array: end with .numpy() (a tensor, .tolist() or "
            ".item() is not one).",
            f"{where_zh} 返回的是 {type(got).__name__}，不是 NumPy 数组：最后要调用 .numpy()"
            "（张量、.tolist() 和 .item() 的结果都不是 NumPy 数组）。",
        )
        require(
            got.shape == want.shape,
            f"{where} has shape {got.shape}, expected {want.shape}: keep the shape.",
            f"{where_zh} 的形状是 {got.shape}，应为 {want.shape}：不要改变形状。",
        )
        require(
            not (want.dtype == np.float16 and got.dtype != np.float16),
            f"{where} is {got.dtype}: NumPy has float16, so keep it; only bfloat16 needs widening.",
            f"{where_zh} 的数据类型是 {got.dtype}：NumPy 有 float16，应保持不变；只有 bfloat16 需要转换。",
        )
        require(
            got.dtype == want.dtype,
            f"{where} is {got.dtype}, expected {want.dtype}: keep the data type (only bfloat16 becomes float32).",
            f"{where_zh} 的数据类型是 {got.dtype}，应为 {want.dtype}："
            "保持数据类型不变（只有 bfloat16 要转成 float32）。",
        )
        require(
            np.array_equal(got, want),
            f"{where} holds other values than the tensor: do not change them.",
            f"{where_zh} 的数值和张量不一样：不要改动数值。",
        )
    passed(
        f"to_numpy gives the right array for {len(cases)} kinds of tensor: gradients, bfloat16 and devices included",
        f"to_numpy 对 {len(cases)} 种张量都给出了正确的数组，包括需要梯度的、bfloat16 的和不在 CPU 上的",
    )


# Exercise 2: to_device -----------------------------------------------------------------------------------------------


def _batch() -> dict:
    """A batch as a data loader might give it: tensors in a dict, a list and a tuple, nested, beside plain values."""
    generator = torch.Generator().manual_seed(11)
    return {
        "images": torch.rand(2, 1, 8, 8, generator=generator),
        "labels": torch.tensor([3, 7]),
        "extra": {"masks": [torch.tensor([True, False]), torch.tensor([False, True])], "source": "digits"},
        "lengths": (torch.tensor([8, 8]), 2),
        "scale": 0.5,
    }


def _leaves(node: object, path: str = "batch") -> list[tuple[str, object]]:
    """(where, value) for every value in a nested batch that is not a dict, list or tuple."""
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in _leaves(value, f"{path}[{key!r}]")]
    if isinstance(node, list | tuple):
        return [leaf for i, value in enumerate(node) for leaf in _leaves(value, f"{path}[{i}]")]
    return [(path, node)]


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


def _unchanged(batch: object, original: object) -> bool:
    """Whether the caller's batch still nests and holds what it did: same containers, same tensors (device, dtype,
    shape, values) and same plain values."""
    if type(batch) is not type(original):
        return False
    if isinstance(original, dict):
        return list(batch) == list(original) and all(_unchanged(batch[k], original[k]) for k in original)
    if isinstance(original, list | tuple):
        return len(batch) == len(original) and all(_unchanged(a, b) for a, b in zip(batch, original, strict=True))
    if isinstance(original, torch.Tensor):
        return (
            batch.device == original.device
            and batch.dtype == original.dtype
            and batch.shape == original.shape
            and torch.equal(batch, original)
        )
    return batch == original


def _devices() -> list[torch.device]:
    """The CPU, `meta` (every machine has it, so every move shows) and the machine's accelerator where it has one."""
    devices = [torch.device("cpu"), torch.device("meta")]
    accelerator = pick_device()
    return devices + ([accelerator] if accelerator.type != "cpu" else [])


def check_to_device(to_device: Callable[[object, torch.device], object]) -> None:
    """`to_device(batch, device)` must move every tensor of a nested batch to `device` and keep everything else."""
    require(
        callable(to_device),
        "Pass the function itself: check_to_device(to_device), without ().",
        "把函数本身传进去：check_to_device(to_device)，不要加 ()。",
    )
    for device in _devices():
        batch = _batch()
        original = copy.deepcopy(batch)
        try:
            with sandbox():
                got = to_device(batch, device)
        except AttributeError as error:
            raise WrongAnswer(
                hint_text(
                    f"to_device raised AttributeError: {error} (only tensors have .to: leave what is not a tensor "
                    "as it is, such as the string 'digits' and the int 2).",
                    "to_device 报错 AttributeError（只有张量才有 .to：不是张量的值，比如字符串 'digits' 和整数 2，"
                    "原样保留）。",
                )
            ) from error
        require(
            _unchanged(batch, original),
            "to_device changed the caller's batch (an entry replaced in one of its dicts or lists; a copy of the top "
            "level still shares the nested ones): build a new dict, list or tuple instead of assigning into it.",
            "to_device 改动了调用者传进来的批（在它的某个字典或列表里替换了某一项；只复制最外层的话，里面嵌套的容器"
            "仍是共用的）：应当新建字典、列表或元组，而不是往原来的里面赋值。",
        )
        _same_structure(got, original)
        for (where, value), (_, want) in zip(_leaves(got), _leaves(original), strict=True):
            if not isinstance(want, torch.Tensor):
                require(
                    not isinstance(value, torch.Tensor) and type(value) is type(want) and value == want,
                    f"{where} is {'a tensor' if isinstance(value, torch.Tensor) else repr(value)}, expected the "
                    f"{type(want).__name__} {want!r}: leave values that are not tensors as they are.",
                    f"{where} 变成了{'一个张量' if isinstance(value, torch.Tensor) else f' {value!r}'}，应为 "
                    f"{type(want).__name__} {want!r}：不是张量的值要原样保留。",
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
                value.dtype == want.dtype and value.shape == want.shape,
                f"{where} is {value.dtype} of shape {tuple(value.shape)}, expected {want.dtype} of shape "
                f"{tuple(want.shape)}: pass only the device to .to, keep the data type.",
                f"{where} 是形状为 {tuple(value.shape)} 的 {value.dtype}，应为形状 {tuple(want.shape)} 的 "
                f"{want.dtype}：.to 只传设备，数据类型保持不变。",
            )
            if device.type != "meta":  # a meta tensor has no values to compare
                require(
                    torch.equal(value.cpu(), want),
                    f"{where} holds other values than the batch: move the tensors, do not change them.",
                    f"{where} 的数值和原来的批不一样：只搬动张量，不要改动数值。",
                )
    passed(
        "to_device moves every tensor of a nested batch and keeps its structure, data types and plain values",
        "to_device 搬动了嵌套批中的每一个张量，结构、数据类型和非张量的值都保持不变",
    )
