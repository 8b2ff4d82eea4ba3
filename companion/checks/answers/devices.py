"""Lesson 11's exercises for the teacher: the reference answers, other correct answers and typical mistakes."""

import copy

import torch
from torch.utils import _pytree

from companion.checks.devices import check_to_device, check_to_numpy
from companion.exercises import Exercise, Mistake

# Exercise 1: to_numpy ------------------------------------------------------------------------------------------------


def _reference_to_numpy(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _right_is_cuda(t):
    t = t.detach()
    if t.is_cuda:
        t = t.cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _right_forced(t):
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy(force=True)


def _right_one_to(t):
    return t.detach().to("cpu", torch.float32 if t.dtype == torch.bfloat16 else t.dtype).numpy()


def _right_device_type(t):
    if t.device.type != "cpu":
        t = t.to("cpu")
    if t.dtype == torch.bfloat16:
        t = t.to(torch.float32)
    return t.detach().numpy().copy()  # a copy of its own, on every device alike


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


def _to_numpy_through_data(t):
    if t.dtype == torch.bfloat16:
        t.data = t.data.float()  # the caller's tensor becomes float32 too
    return t.detach().cpu().numpy()


def _to_numpy_as_a_tensor(t):
    return t.detach().cpu().float()


def _to_numpy_through_a_list(t):
    import numpy as np

    t = t.detach().cpu()
    return np.array((t.float() if t.dtype == torch.bfloat16 else t).tolist())


def _to_numpy_reseeding(t):
    torch.manual_seed(0)  # "for reproducibility", in a function that draws nothing
    return _reference_to_numpy(t)


# Exercise 2: to_device -----------------------------------------------------------------------------------------------


def _reference_to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: _reference_to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(_reference_to_device(value, device) for value in batch)
    return batch


def _right_tree_map(batch, device):
    return _pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, batch)


def _right_copy_then_replace(batch, device):
    batch = copy.deepcopy(batch)

    def move(node):
        if isinstance(node, dict):
            for key in node:
                node[key] = move(node[key])
            return node
        if isinstance(node, list):
            node[:] = [move(value) for value in node]
            return node
        if isinstance(node, tuple):
            return tuple(move(value) for value in node)
        return node.to(device, non_blocking=True) if isinstance(node, torch.Tensor) else node

    return move(batch)


def _right_by_type_match(batch, device):
    match batch:
        case torch.Tensor():
            return batch.to(device=device)
        case dict():
            return dict((key, _right_by_type_match(value, device)) for key, value in batch.items())
        case list():
            return [_right_by_type_match(value, device) for value in batch]
        case tuple():
            return tuple(_right_by_type_match(value, device) for value in batch)
        case _:
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


def _to_device_numbers_to_tensors(batch, device):
    if isinstance(batch, int | float) and not isinstance(batch, bool):
        return torch.tensor(batch).to(device)
    if isinstance(batch, dict):
        return {key: _to_device_numbers_to_tensors(value, device) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(_to_device_numbers_to_tensors(value, device) for value in batch)
    return batch.to(device) if isinstance(batch, torch.Tensor) else batch


def _to_device_assigning_into_the_batch(batch, device):
    for key, value in batch.items():
        if isinstance(value, torch.Tensor):
            batch[key] = value.to(device)
    return _reference_to_device(batch, device)


def _to_device_copying_the_top_level(batch, device):
    def move(node):
        if isinstance(node, dict):
            for key in node:
                node[key] = move(node[key])
            return node
        if isinstance(node, list):
            node[:] = [move(value) for value in node]  # a list the caller's batch shares
            return node
        if isinstance(node, tuple):
            return tuple(move(value) for value in node)
        return node.to(device) if isinstance(node, torch.Tensor) else node

    return move(dict(batch))


EXERCISES = [
    Exercise(
        check=check_to_numpy,
        reference=_reference_to_numpy,
        mistakes=(
            Mistake(
                "no .detach() (a tensor that requires grad)",
                _to_numpy_without_detach,
                ".detach()",
                what_zh="漏了 .detach()（张量需要梯度时会报错）",
            ),
            Mistake(
                "no .cpu() (a tensor on an accelerator)",
                _to_numpy_without_cpu,
                "copy it to the CPU first",
                what_zh="漏了 .cpu()（张量在加速器上时会报错）",
            ),
            Mistake(
                "the lesson's line, which bfloat16 refuses",
                _to_numpy_as_in_the_lesson,
                "NumPy has no bfloat16",
                what_zh="照搬课上那一行，遇到 bfloat16 会报错",
            ),
            Mistake(
                "every tensor made float32",
                _to_numpy_always_float,
                "only bfloat16 becomes float32",
                what_zh="所有张量都转成 float32",
            ),
            Mistake(
                "float16 widened too",
                _to_numpy_widening_every_half,
                "NumPy has float16",
                what_zh="把 float16 也转成了 float32",
            ),
            Mistake(
                "requires_grad_(False) on the caller's tensor",
                _to_numpy_unhooking_the_caller,
                "no longer requires",
                what_zh="对调用者的张量调用 requires_grad_(False)",
            ),
            Mistake(
                "bfloat16 widened through t.data = ...",
                _to_numpy_through_data,
                "assigning to t.data",
                what_zh="通过 t.data = ... 把 bfloat16 转成 float32",
            ),
            Mistake(
                "a tensor returned, not an array",
                _to_numpy_as_a_tensor,
                "not a NumPy array",
                what_zh="返回的是张量，不是 NumPy 数组",
            ),
            Mistake(
                "np.array of .tolist() (float64, int64 guessed)",
                _to_numpy_through_a_list,
                "keep the data type",
                what_zh="用 np.array 包装 .tolist() 的结果（数据类型靠猜，成了 float64、int64）",
            ),
            Mistake(
                "reseeds the global generator",
                _to_numpy_reseeding,
                "global random generator",
                what_zh="重新设置全局随机数生成器的随机种子",
            ),
        ),
        why="detach() leaves the graph, cpu() copies from the accelerator (and is free on the CPU), and bfloat16, "
        "which NumPy lacks, widens to float32 without rounding.",
        why_zh="detach() 脱离计算图，cpu() 从加速器上复制回来（在 CPU 上不花代价），而 NumPy 没有的 bfloat16 "
        "可以无损地转成 float32。",
        discuss="On the CPU the returned array shares memory with the tensor, on a GPU it does not. When does that "
        "matter, and what would you add to make the two behave alike?",
        discuss_zh="在 CPU 上，返回的数组和张量共享内存；在 GPU 上则不共享。这在什么时候会出问题？"
        "怎样改才能让两者表现一致？",
        right=(_right_is_cuda, _right_forced, _right_one_to, _right_device_type),
    ),
    Exercise(
        check=check_to_device,
        reference=_reference_to_device,
        mistakes=(
            Mistake(
                "calls .to but keeps the old tensors",
                _to_device_keeping_the_old_tensors,
                "keep what it returns",
                what_zh="调用了 .to，却没接住返回值，留下的还是旧张量",
            ),
            Mistake("moves the top level only", _to_device_top_level_only, "(recursively)", what_zh="只搬动了最外层"),
            Mistake(
                "calls .to on a string",
                _to_device_calling_to_on_everything,
                "only tensors have .to",
                what_zh="对字符串也调用 .to",
            ),
            Mistake(
                "turns tuples into lists",
                _to_device_tuples_to_lists,
                "keep tuples as tuples",
                what_zh="把元组变成了列表",
            ),
            Mistake(
                "also changes the data type", _to_device_as_float32, "keep the data type", what_zh="连数据类型也改了"
            ),
            Mistake(
                "turns numbers into tensors",
                _to_device_numbers_to_tensors,
                "not tensors as they are",
                what_zh="把数字也变成了张量",
            ),
            Mistake(
                "assigns into the caller's dict",
                _to_device_assigning_into_the_batch,
                "changed the caller's",
                what_zh="直接往调用者的字典里赋值",
            ),
            Mistake(
                "copies the top level only, then replaces",
                _to_device_copying_the_top_level,
                "shares the nested",
                what_zh="只复制最外层，再往里面替换（嵌套的容器仍与调用者共用）",
            ),
        ),
        why="A tensor's .to returns the moved tensor and leaves the original alone, so a batch is rebuilt, entry by "
        "entry, from what .to returns.",
        why_zh="张量的 .to 返回搬动后的新张量，原张量不动；所以要用 .to 的返回值，逐项重新构造这个批。",
        discuss="A model moves in place with model.to(device); a batch does not. Why is it designed that way?",
        discuss_zh="模型用 model.to(device) 就地搬动，批却不行。为什么要这样设计？",
        right=(_right_tree_map, _right_copy_then_replace, _right_by_type_match),
    ),
]
