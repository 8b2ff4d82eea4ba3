"""PyTorch's error messages, read: what load_checkpoint says when torch.load fails, and the part of PyTorch's message
each self-check and the launcher look for to turn an error into the advice a learner needs.

PyTorch words its errors for its own reasons and may reword them in any release, so every pattern on its message
text lives here, and tests (tests/test_torch_errors.py, tests/test_checkpoint.py) raise the real error each pattern
is meant for and check that it still matches: new wording fails a test instead of quietly turning a precise message
into a vague one.
"""

import re
import sys
from pathlib import Path

from companion.language import in_language

# weights_only=True refuses a GLOBAL (a function or class the pickle names) in one of two ways:
# a module PyTorch never allows ("Trying to load unsupported GLOBAL posix.system whose module posix is blocked."),
BLOCKED_GLOBAL = re.compile(r"Trying to load unsupported GLOBAL (\S+) whose module (\S+) is blocked")
# or any name not on its list ("Unsupported global: GLOBAL __main__.Config was not an allowed global by default.").
REFUSED_GLOBAL = re.compile(r"GLOBAL (\S+) was not an allowed global")
# Tensors saved on a device this machine lacks: CUDA or XPU absent, MPS unknown here, an unknown location tag,
# a device whose module is not registered (HPU).
MISSING_DEVICE = re.compile(
    r"deserialize object on a|device not recognized|restore data location|device module is not registered"
)
# PyTorch puts two paragraphs of advice about weights_only before the real reason; this marks where it starts.
UNPICKLER_REASON = "WeightsUnpickler error:"

# Names that run commands or code when a pickle calls them. PyTorch blocks only sys, os, posix and nt; the rest it
# reports like any unknown name (and names subprocess `commands`, its Python 2 name in pickles).
CODE_MODULES = {
    "os", "posix", "nt", "sys", "subprocess", "commands", "shutil", "importlib", "runpy", "pty", "socket",
    "ctypes", "pickle", "_pickle", "marshal", "code", "codeop", "webbrowser", "multiprocessing", "signal",
}  # fmt: skip
CODE_BUILTINS = {"eval", "exec", "compile", "__import__", "open", "getattr", "setattr", "delattr", "breakpoint"}
# Libraries whose functions rebuild plain values (numpy arrays and scalars): refused, but not a threat.
VALUE_LIBRARIES = {"numpy", "torch"}

# What the self-checks and the launcher look for (each constant: a part of the message of one real error).
BROADCAST_FAILED = "must match the size"  # x - mean with a (n,) mean against x's n rows: sizes that cannot line up
VIEW_NOT_CONTIGUOUS = "view size is not compatible"  # .view() regrouping a tensor not laid out row by row
INDEX_OUT_OF_BOUNDS = "out of bounds for dimension 0"  # scatter_ along dim 0 with positions meant for dim 1
DTYPE_MISMATCH = "dtype"  # scatter_ of int64 positions into a float32 tensor (and other operations' dtype errors)
SHAPE_MISMATCH = ("no larger", "Dimension out of range", "number of dimensions")  # scatter_ with an uncovered index
NUMPY_NEEDS_DETACH = "requires grad"  # .numpy() of a tensor that requires grad
NUMPY_NEEDS_CPU = "device type tensor to numpy"  # .numpy() of a CUDA or MPS tensor
NUMPY_NO_BFLOAT16 = "BFloat16"  # .numpy() of a bfloat16 tensor: NumPy has no such type
ITEM_NEEDS_ONE_VALUE = "converted to Scalar"  # .item() of a tensor with more than one element
SPAWN_RANK_TERMINATED = re.compile(r"process (\d+) terminated", re.IGNORECASE)  # torch.multiprocessing.spawn


def says(error: BaseException, *parts: str) -> bool:
    """Whether PyTorch's message of `error` contains any of `parts` (constants of this module)."""
    return any(part in str(error) for part in parts)


def explain_load_error(error: BaseException, path: Path) -> str:
    """The message of the CheckpointError for `error`, raised by torch.load on `path`: what happened, what to do."""
    text = str(error)
    if blocked := BLOCKED_GLOBAL.search(text):
        module = blocked.group(2)
        why = in_language(
            f"its module {module} runs commands, so PyTorch blocks it",
            f"它的模块 {module} 会执行命令，所以 PyTorch 拦下了它",
        )
        return hostile(path, blocked.group(1), why)
    if refused := REFUSED_GLOBAL.search(text):
        name = refused.group(1)
        if runs_code(name):
            why = in_language(
                "a file of weights and plain data never calls a function while it loads",
                "只含权重和普通数据的文件在加载时从不调用函数",
            )
            return hostile(path, name, why)
        return in_language(
            f"'{path.name}' holds a Python object that weights_only=True refuses to rebuild: {name}. If the file "
            "holds a whole pickled model, load its state_dict instead. If you trust this class, pass "
            "safe_globals=[TheClass]; pass weights_only=False only for a file you made yourself, since loading it "
            "can run any code",
            f"'{path.name}' 里有一个 weights_only=True 拒绝重建的 Python 对象：{name}。如果文件里是整个 pickle "
            "序列化的模型，请改为加载它的 state_dict。如果你信任这个类，请传入 safe_globals=[你的类]；"
            "只有对你自己生成的文件才传 weights_only=False，因为加载它可能运行任何代码",
        )
    if isinstance(error, AttributeError | ImportError):  # only with weights_only=False: a pickled class moved
        return in_language(
            f"'{path.name}' names a class or module that cannot be found ({type(error).__name__}: {error}): a "
            "pickled model needs its class under the same name in the same module; save state_dicts instead",
            f"'{path.name}' 提到了一个找不到的类或模块（{type(error).__name__}: {error}）：pickle 序列化的模型"
            "需要它的类以同样的名字待在同一个模块里；请改为保存 state_dict",
        )
    if MISSING_DEVICE.search(text):
        return in_language(
            f"'{path.name}' holds tensors for a device this machine cannot give them ({first_sentence(error)}): "
            "pass map_location='cpu' (the default), or a device it has",
            f"'{path.name}' 里的张量属于这台机器没有的设备（{first_sentence(error)}）："
            "请传入 map_location='cpu'（默认值），或者这台机器有的设备",
        )
    return corrupt(path, error)


def hostile(path: Path, name: str, why: str) -> str:
    """The message for a file whose pickle asks to call `name` while it loads."""
    # The Chinese message keeps " (" before the reason too: lesson 10 cuts the message there to show its start.
    return in_language(
        f"'{path.name}' asks to run {name} while it is loaded ({why}). The file may be malicious: do not load it "
        "with weights_only=False. Delete it, or ask its sender for a checkpoint of state_dicts and plain data",
        f"'{path.name}' 要求在加载时运行 {name} ({why})。这个文件可能是恶意的：不要用 weights_only=False "
        "加载它。请删除它，或者请发送者提供只含 state_dict 和普通数据的检查点",
    )


def corrupt(path: Path, error: BaseException) -> str:
    """The message for bytes torch.load cannot read: say what happened and what to do, quote PyTorch's first line."""
    size = path.stat().st_size
    return in_language(
        f"'{path.name}' ({size} bytes) is truncated or corrupt, not a complete torch.save file "
        f"({first_sentence(error)}). Load an earlier checkpoint, and save with save_checkpoint, which never "
        "leaves a partial file under the checkpoint's own name",
        f"'{path.name}'（{size} 字节）被截断或已损坏，不是完整的 torch.save 文件"
        f"（{first_sentence(error)}）。请加载更早的检查点，并用 save_checkpoint 保存，"
        "它从不会在检查点自己的名字下留下不完整的文件",
    )


def runs_code(name: str) -> bool:
    """Whether the global `name` (as PyTorch prints it) is something a pickle calls, rather than a class it builds.

    Decided without importing anything: importing a module that an untrusted file names would run that module.
    """
    module, _, attribute = name.rpartition(".")
    module = module or "builtins"  # PyTorch prints builtins.eval as `eval`
    root = module.split(".")[0]
    if root in CODE_MODULES or (module == "builtins" and attribute in CODE_BUILTINS):
        return True
    if root in VALUE_LIBRARIES:
        return False
    found = getattr(sys.modules.get(module), attribute, None)  # only if that module is already imported
    if found is not None:
        return not isinstance(found, type)
    return not attribute[:1].isupper()  # by Python's naming convention: classes are CapWords, functions are not


def first_sentence(error: BaseException) -> str:
    """The error's type and the first sentence of what PyTorch said, to quote inside our own message."""
    text = str(error).strip()
    if UNPICKLER_REASON in text:  # the real reason follows PyTorch's advice about weights_only
        text = text.split(UNPICKLER_REASON, 1)[1].strip()
    first = re.split(r"\.\s|\n", text, maxsplit=1)[0][:150]
    return f"{type(error).__name__}: {first}"
