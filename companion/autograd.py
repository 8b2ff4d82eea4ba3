"""Lesson 02: the computation graph autograd records, read from the real graph, and the picture of its backward pass.

`backward_graph` walks `output.grad_fn` through `next_functions`, the way the lesson walks it by hand, and lists the
nodes and the edges between them. `trace_backward` runs `output.backward()` with a hook on every node and adds to
each edge the gradient that `backward()` passed along it. `plot_backward` draws both: lesson 02's figure of the
graph of z = x·w + sin x and its backward pass. Argument guards sit below.
"""

from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from companion.language import in_language
from companion.plotting import COLUMN_WIDTH


@dataclass
class GraphNode:
    """One node of the recorded graph: `node` is the real autograd node (a tensor's `grad_fn`, or the
    `AccumulateGrad` node of a leaf), `name` its class name, `label` the name `names` gives its tensor."""

    node: object
    name: str
    label: str | None
    depth: int  # the longest path from the output's node: 0 for the output itself


@dataclass
class GraphEdge:
    """`parent` (closer to the output) hands a gradient to `child`, its input number `slot`; indices into nodes."""

    parent: int
    child: int
    slot: int
    gradient: torch.Tensor | None = None  # filled in by trace_backward


@dataclass
class BackwardGraph:
    """The nodes in the order a walk from the output first meets them, and the edges between them."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)


def _node_name(node: object) -> str:
    """An autograd node's class name: `MulBackward0`; `AccumulateGrad` for the node that writes a leaf's `.grad`."""
    return node.name().split("::")[-1]  # node.name() says torch::autograd::AccumulateGrad for a leaf


def backward_graph(output: torch.Tensor, names: dict[str, torch.Tensor] | None = None) -> BackwardGraph:
    """The graph behind `output`, read from `output.grad_fn.next_functions`, without running backward.

    A `None` slot in `next_functions` (an input that autograd does not track, such as a constant) gets no node.
    `names` maps a label to a tensor of the computation: a leaf labels its `AccumulateGrad` node, a result its
    `grad_fn`.
    """
    _check_output(output)
    names = _check_names(names)
    graph, index, queue = BackwardGraph(), {}, [output.grad_fn]
    while queue:  # breadth first: a node's inputs are listed after it
        node = queue.pop(0)
        if node in index:
            continue
        index[node] = len(graph.nodes)
        graph.nodes.append(GraphNode(node, _node_name(node), _label(node, names), depth=0))
        queue.extend(child for child, _ in node.next_functions if child is not None)
    for node, parent in index.items():
        for slot, (child, _) in enumerate(node.next_functions):
            if child is not None:
                graph.edges.append(GraphEdge(parent, index[child], slot))
    for _ in graph.nodes:  # longest path from the output: relax every edge once per node
        for edge in graph.edges:
            parent, child = graph.nodes[edge.parent], graph.nodes[edge.child]
            child.depth = max(child.depth, parent.depth + 1)
    return graph


def trace_backward(output: torch.Tensor, names: dict[str, torch.Tensor] | None = None) -> BackwardGraph:
    """`backward_graph(output, names)`, then `output.backward()` with a hook on every node that records the
    gradients the node hands to its inputs: each edge gets the one passed along it. The leaves' `.grad` fill as
    usual. `output` must be a single number, as for `output.backward()`."""
    graph = backward_graph(output, names)
    _check_scalar(output)
    handed = {}  # node index -> the gradients it returned, one per input slot

    def recorder(position: int):
        def hook(grad_inputs, grad_outputs):  # grad_inputs: what the node passes back, one per next_functions slot
            handed[position] = tuple(None if g is None else g.detach().clone() for g in grad_inputs)

        return hook

    handles = [entry.node.register_hook(recorder(i)) for i, entry in enumerate(graph.nodes)]
    try:
        output.backward()
    finally:
        for handle in handles:
            handle.remove()
    for edge in graph.edges:
        edge.gradient = handed[edge.parent][edge.slot]
    return graph


def plot_backward(output: torch.Tensor, names: dict[str, torch.Tensor] | None = None) -> Figure:
    """Draw the graph behind `output` with the gradient on each edge, after running `trace_backward` (so the
    leaves' `.grad` are filled). The output's node is at the top; arrows point the way gradients flow, to the
    inputs; under each leaf, its `.grad`."""
    graph = trace_backward(output, names)
    levels = {}  # depth -> node indices, in the order the walk met them
    for i, entry in enumerate(graph.nodes):
        levels.setdefault(entry.depth, []).append(i)
    depth = max(levels) + 1
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 1.0 * depth + 1.0), layout="constrained")
    place = {}  # node index -> (x, y): x in (0, 1), y = -depth
    for level in sorted(levels):
        members = levels[level]
        if level > 0:  # under the mean position of its parents, so that few arrows cross
            parents = {i: [place[e.parent][0] for e in graph.edges if e.child == i] for i in members}
            members.sort(key=lambda i: sum(parents[i]) / len(parents[i]))
        for k, i in enumerate(members):
            place[i] = ((k + 1) / (len(members) + 1), -level)
    box = {"boxstyle": "round,pad=0.35", "facecolor": "white", "edgecolor": "0.3"}
    arrow = {"arrowstyle": "-|>", "color": "tab:red", "linewidth": 1.5, "shrinkA": 0, "shrinkB": 0}
    gradient_box = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"}
    top = place[0]  # backward() starts at the output's node with the gradient 1 (d output / d output)
    ax.annotate("", xy=(top[0], top[1] + 0.22), xytext=(top[0], top[1] + 0.62), arrowprops=arrow, gid="arrow:start")
    ax.text(top[0] + 0.012, top[1] + 0.42, "1", ha="left", va="center", fontsize=10, color="tab:red", gid="start")
    for edge in graph.edges:
        (x0, y0), (x1, y1) = place[edge.parent], place[edge.child]
        lean = 0.035 * ((x0 > x1) - (x0 < x1))  # arrows into one node arrive side by side, not on top of each other
        ax.annotate(
            "",
            xy=(x1 + lean, y1 + 0.22),
            xytext=(x0 - lean, y0 - 0.22),
            arrowprops=arrow,
            gid=f"arrow:{edge.parent}-{edge.child}",
        )
        ax.text(
            (x0 + x1) / 2,
            (y0 + y1) / 2,
            _format(edge.gradient),
            ha="center",
            va="center",
            fontsize=10,
            color="tab:red",
            bbox=gradient_box,
            gid=f"edge:{edge.parent}-{edge.child}",
        )
    for i, entry in enumerate(graph.nodes):
        x, y = place[i]
        text = entry.name if entry.label is None else f"{entry.name}\n{_describe(entry.label, names)}"
        is_leaf = entry.name == "AccumulateGrad"
        face = "#dbe9f6" if is_leaf else "white"
        ax.text(x, y, text, ha="center", va="center", fontsize=10, bbox={**box, "facecolor": face}, gid=f"node:{i}")
        if is_leaf:
            grad = f"{entry.label or ''}.grad = {_format(entry.node.variable.grad)}"
            ax.text(x, y - 0.45, grad, ha="center", va="center", fontsize=10, gid=f"grad:{i}")
    ax.set_xlim(0, 1)
    ax.set_ylim(-(depth - 1) - 0.65, 0.7)
    ax.set_axis_off()
    return fig


def _label(node: object, names: dict[str, torch.Tensor]) -> str | None:
    """The name `names` gives the tensor a node stands for: a leaf's `AccumulateGrad` node holds it as `.variable`."""
    for label, tensor in names.items():
        if getattr(node, "variable", None) is tensor or tensor.grad_fn is node:
            return label
    return None


def _describe(label: str, names: dict[str, torch.Tensor]) -> str:
    """`x = 2` for a tensor of one number, `x (2, 3)` for a larger one."""
    value = names[label].detach()
    return f"{label} = {_number(value)}" if value.numel() == 1 else f"{label} {tuple(value.shape)}"


def _number(value: torch.Tensor) -> str:
    """One number to 4 significant digits, with a true minus sign."""
    return f"{value.item():.4g}".replace("-", "−")


def _format(gradient: torch.Tensor | None) -> str:
    """A gradient as the figure writes it: a number to 4 significant digits, or a shape."""
    if gradient is None:
        return "None"
    return _number(gradient) if gradient.numel() == 1 else f"{in_language('shape', '形状')} {tuple(gradient.shape)}"


# ----------------------------------------------------------------------------------------------------------------
# Guards: the graph functions take a result of a recorded computation; each error names the fix.


def _check_output(output: object) -> None:
    if not isinstance(output, torch.Tensor):
        raise TypeError(
            in_language(
                f"output must be a torch.Tensor computed from a tensor that requires grad, not {output!r}",
                f"output 必须是由 requires_grad 的张量算出的 torch.Tensor，而不是 {output!r}",
            )
        )
    if output.grad_fn is None:
        raise ValueError(
            in_language(
                "output has no grad_fn, so there is no recorded graph: compute it from a tensor created with "
                "requires_grad=True, outside torch.no_grad()",
                "output 没有 grad_fn，所以没有记录下来的计算图：请在 torch.no_grad() 之外，"
                "从用 requires_grad=True 创建的张量算出它",
            )
        )


def _check_scalar(output: torch.Tensor) -> None:
    if output.numel() != 1:
        raise ValueError(
            in_language(
                f"output must hold a single number, as backward() needs, not shape {tuple(output.shape)}: "
                "reduce it first, e.g. output.sum()",
                f"output 必须只含一个数（backward() 要求如此），而不是形状 {tuple(output.shape)}："
                "请先归约，例如 output.sum()",
            )
        )


def _check_names(names: object) -> dict[str, torch.Tensor]:
    if names is None:
        return {}
    if not isinstance(names, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in names.items()
    ):
        raise TypeError(
            in_language(
                "names must be a dict from a label to a tensor of the computation, such as {'x': x}",
                "names 必须是从名字到计算中张量的字典，例如 {'x': x}",
            )
        )
    return names
