"""companion.autograd against autograd itself: the graph it reads is the real grad_fn chain, the gradient on each
edge is what backward() passed along it, and the figure draws exactly those nodes, edges and numbers."""

import math
import re
import warnings

import matplotlib.pyplot as plt
import pytest
import torch

from companion import autograd
from companion.autograd import _node_name, backward_graph, plot_backward, trace_backward
from companion.plotting import COLUMN_WIDTH, use_course_style
from tests.bad_inputs import bad


def lesson_graph():
    """The lesson's expression z = x * w + sin x at x = 2, w = 3."""
    x = torch.tensor(2.0, requires_grad=True)
    w = torch.tensor(3.0, requires_grad=True)
    return x, w, x * w + x.sin()


def walk(output):
    """Breadth-first walk of output.grad_fn.next_functions written out by hand: names, and (parent, child) pairs."""
    order, edges, queue = [], [], [output.grad_fn]
    while queue:
        node = queue.pop(0)
        if any(node is seen for seen in order):
            continue
        order.append(node)
        queue.extend(child for child, _ in node.next_functions if child is not None)
    position = {id(node): i for i, node in enumerate(order)}
    for i, node in enumerate(order):
        edges += [(i, position[id(child)]) for child, _ in node.next_functions if child is not None]
    return order, edges


def test_the_graph_is_the_real_grad_fn_chain():
    x, w, z = lesson_graph()
    graph = backward_graph(z, {"x": x, "w": w, "z": z})
    order, edges = walk(z)
    assert [entry.node for entry in graph.nodes] == order
    assert [entry.name for entry in graph.nodes] == [
        "AddBackward0",
        "MulBackward0",
        "SinBackward0",
        "AccumulateGrad",
        "AccumulateGrad",
    ]
    assert [entry.name for entry in graph.nodes] == [node.name().split("::")[-1] for node in order]
    assert [(e.parent, e.child) for e in graph.edges] == edges
    assert graph.nodes[0].node is z.grad_fn and graph.nodes[0].label == "z"
    leaves = {entry.label: entry.node.variable for entry in graph.nodes if entry.name == "AccumulateGrad"}
    assert leaves["x"] is x and leaves["w"] is w
    assert [entry.depth for entry in graph.nodes] == [0, 1, 1, 2, 2]
    assert x.grad is None and w.grad is None  # reading the graph runs no backward pass


def test_constant_slots_get_no_node_and_depth_is_the_longest_path():
    x = torch.tensor(3.0, requires_grad=True)
    y = x**2
    z = 3 * y + 1 + x  # x reaches the output directly (depth 1) and through y (depth 3)
    assert (None, 0) in z.grad_fn.next_functions[0][0].next_functions  # the constant 1's empty slot
    graph = backward_graph(z, {"x": x, "y": y})
    names = [entry.name for entry in graph.nodes]
    assert names == [_node_name(node) for node in walk(z)[0]]
    assert names.count("AccumulateGrad") == 1  # one node per leaf, however many paths reach it
    leaf = next(entry for entry in graph.nodes if entry.name == "AccumulateGrad")
    assert leaf.depth == 4 and leaf.label == "x"
    assert next(entry for entry in graph.nodes if entry.name == "PowBackward0").label == "y"


def test_each_edge_carries_the_gradient_backward_passed_along_it():
    x, w, z = lesson_graph()
    graph = trace_backward(z, {"x": x, "w": w})
    carried = {
        (graph.nodes[e.parent].name, graph.nodes[e.child].label or graph.nodes[e.child].name): e.gradient.item()
        for e in graph.edges
    }
    assert carried == pytest.approx(
        {
            ("AddBackward0", "MulBackward0"): 1.0,
            ("AddBackward0", "SinBackward0"): 1.0,
            ("MulBackward0", "x"): 3.0,  # d(x w)/dx = w
            ("MulBackward0", "w"): 2.0,  # d(x w)/dw = x
            ("SinBackward0", "x"): math.cos(2.0),
        }
    )
    # what reaches a leaf adds up to its .grad, which is autograd's own answer
    into_x = sum(e.gradient for e in graph.edges if graph.nodes[e.child].label == "x")
    assert torch.equal(into_x, x.grad)
    x2, w2, z2 = lesson_graph()
    assert torch.equal(x.grad, torch.autograd.grad(z2, x2)[0])
    assert w.grad.item() == 2.0


def test_edges_of_a_vector_graph_carry_tensors():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor([4.0, 5.0, 6.0], requires_grad=True)
    graph = trace_backward((a * b).sum(), {"a": a, "b": b})
    by_child = {graph.nodes[e.child].label: e.gradient for e in graph.edges if graph.nodes[e.child].label}
    assert torch.equal(by_child["a"], b.detach()) and torch.equal(by_child["b"], a.detach())
    assert torch.equal(a.grad, b.detach())


def test_the_graph_records_the_path_python_control_flow_took():
    def doubled_until_large(x):
        while x.abs() < 10:
            x = x * 2
        return x**2 if x > 0 else -x

    for start, doublings, last in ((1.5, 3, "PowBackward0"), (-3.0, 2, "NegBackward0")):
        x = torch.tensor(start, requires_grad=True)
        names = [entry.name for entry in backward_graph(doubled_until_large(x)).nodes]
        assert names == [last] + ["MulBackward0"] * doublings + ["AccumulateGrad"]


def test_the_figure_draws_the_real_nodes_edges_and_gradients():
    use_course_style()
    x, w, z = lesson_graph()
    graph = backward_graph(z, {"x": x, "w": w, "z": z})
    expected_nodes = [entry.name for entry in graph.nodes]
    fig = plot_backward(z, {"x": x, "w": w, "z": z})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph would warn
        fig.canvas.draw()
    assert fig.get_size_inches()[0] <= COLUMN_WIDTH
    (ax,) = fig.axes
    texts = {t.get_gid(): t for t in ax.texts if t.get_gid()}
    drawn_nodes = [texts[f"node:{i}"].get_text().split("\n")[0] for i in range(len(expected_nodes))]
    assert drawn_nodes == expected_nodes
    assert texts["node:0"].get_text() == "AddBackward0\nz = 6.909"  # 2 * 3 + sin 2
    assert sorted(t.get_text().split("\n")[1] for k, t in texts.items() if "AccumulateGrad" in t.get_text()) == [
        "w = 3",
        "x = 2",
    ]
    edges = {k: t.get_text() for k, t in texts.items() if k.startswith("edge:")}
    assert len(edges) == len(graph.edges) == 5
    assert sorted(edges.values()) == sorted(["1", "1", "3", "2", f"{math.cos(2.0):.4g}".replace("-", "\u2212")])
    arrows = [a for a in ax.texts if (a.get_gid() or "").startswith("arrow:")]
    assert len(arrows) == len(graph.edges) + 1  # one per edge, and the 1 that backward() starts with
    assert texts["start"].get_text() == "1"
    grads = sorted(t.get_text() for k, t in texts.items() if k.startswith("grad:"))
    assert grads == ["w.grad = 2", f"x.grad = {x.grad.item():.4g}"]
    assert x.grad.item() == pytest.approx(3 + math.cos(2.0))
    assert all(t.get_fontsize() >= 10 for t in ax.texts if t.get_text())
    plt.close(fig)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: backward_graph(2.0), TypeError, "output must be a torch.Tensor"),
        (lambda: backward_graph(torch.ones(2)), ValueError, "requires_grad=True"),
        (lambda: trace_backward(torch.ones(2, requires_grad=True) * 2), ValueError, "reduce it first"),
        (lambda: backward_graph(torch.ones(2, requires_grad=True) * 2, {"x": 1.0}), TypeError, "such as {'x': x}"),
    ],
    ids=["not-a-tensor", "no-grad-fn", "not-scalar", "names-not-tensors"],
)
def test_bad_arguments_name_the_fix(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        autograd.backward_graph,
        (2.0,),
        TypeError,
        "output must be a torch.Tensor computed from a tensor that requires grad",
        "not-a-tensor",
    ),
    bad(
        autograd.backward_graph,
        (torch.ones(2),),
        ValueError,
        "compute it from a tensor created with requires_grad=True",
        "no-grad-fn",
    ),
    bad(
        autograd.backward_graph,
        (torch.ones(2, requires_grad=True) * 2, {"x": 1.0}),
        TypeError,
        "names must be a dict from a label to a tensor",
        "names",
    ),
    bad(
        autograd.trace_backward,
        (torch.ones(2, requires_grad=True) * 2,),
        ValueError,
        "reduce it first, e.g. output.sum()",
        "not-scalar",
    ),
]
