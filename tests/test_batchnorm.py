"""companion.batchnorm against nn.BatchNorm2d (statistics, the reference layer over many steps, the plot) and the
lesson's self-checks in companion.checks.batchnorm."""

import copy
import re
import warnings

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import batchnorm
from companion.batchnorm import (
    BatchNorm2dReference,
    channel_statistics,
    normalize_per_channel,
    normalize_per_position,
    normalized_together,
    plot_norm_groups,
    plot_running_means,
    running_mean_history,
)
from companion.checks.batchnorm import check_fuse_conv_bn, check_group_norm
from companion.exercises import PASS_MARK, WrongAnswer
from companion.plotting import COLUMN_WIDTH, use_course_style
from tests.bad_inputs import BN3, FEATURES, bad


def assert_close(got, want):
    """Equal up to rounding: float32 within 1e-5, float64 within torch.testing's default 1e-7."""
    tolerance = {} if got.dtype == torch.float64 else {"rtol": 1e-5, "atol": 1e-5}
    torch.testing.assert_close(got, want, **tolerance)


def assert_same_state(reference: BatchNorm2dReference, module: nn.BatchNorm2d):
    """Parameters and buffers of the reference equal the module's (None where the module has None)."""
    for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
        got, want = getattr(reference, name), getattr(module, name)
        if want is None:
            assert got is None, name
        elif name == "num_batches_tracked":
            assert torch.equal(got, want)
        else:
            assert_close(got, want.detach())


@st.composite
def layer_and_batches(draw):
    """A random nn.BatchNorm2d (every option) with random weight and bias, and a few random batches for it."""
    channels = draw(st.integers(1, 4))
    momentum = draw(st.one_of(st.none(), st.sampled_from([0.0, 0.1, 0.5, 1.0]), st.floats(0.0, 1.0)))
    affine = draw(st.booleans())
    track = draw(st.booleans())
    eps = draw(st.sampled_from([1e-5, 1e-3, 0.5]))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    module = nn.BatchNorm2d(channels, eps=eps, momentum=momentum, affine=affine, track_running_stats=track)
    if affine:
        with torch.no_grad():
            module.weight.copy_(torch.rand(channels, generator=generator) * 2 + 0.1)
            module.bias.copy_(torch.randn(channels, generator=generator))
    batches = []
    for _ in range(draw(st.integers(1, 4))):
        n, h, w = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
        if n * h * w == 1:
            n = 2  # one value per channel cannot be normalised in training mode (tested separately)
        scale, shift = draw(st.floats(0.1, 10.0)), draw(st.floats(-5.0, 5.0))
        batches.append(torch.randn(n, channels, h, w, generator=generator) * scale + shift)
    return module, batches


@settings(max_examples=50, deadline=None)
@given(layer_and_batches())
def test_reference_matches_batchnorm2d_step_by_step_then_in_eval_mode(case):
    module, batches = case
    settings = (module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats)
    assert_same_state(BatchNorm2dReference(*settings), nn.BatchNorm2d(*settings))  # the same initial state
    # float64, so that a batch of two nearly equal values cannot turn float32 rounding into a failure
    module.double()
    batches = [x.double() for x in batches]
    reference = BatchNorm2dReference.from_module(module)
    for x in batches:  # training mode: outputs and buffers after every step
        assert_close(reference(x), module(x))
        assert_same_state(reference, module)
    module.eval()
    reference.eval()
    for x in batches:  # evaluation mode: outputs, and buffers that no longer move
        assert_close(reference(x), module(x))
        assert_same_state(reference, module)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("affine", [True, False])
def test_named_options_over_ten_steps(momentum, affine):
    generator = torch.Generator().manual_seed(0)
    module = nn.BatchNorm2d(3, momentum=momentum, affine=affine)
    reference = BatchNorm2dReference(3, momentum=momentum, affine=affine)
    for _ in range(10):
        x = torch.randn(4, 3, 5, 5, generator=generator) * 2 + 3
        assert_close(reference(x), module(x))
        assert_same_state(reference, module)
    assert int(reference.num_batches_tracked) == 10
    x = torch.randn(1, 3, 2, 2, generator=generator)
    assert_close(reference.eval()(x), module.eval()(x))


@pytest.mark.parametrize("built_with", [True, False])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_track_running_stats_changed_on_an_existing_layer_behaves_like_torch(built_with, momentum):
    """PyTorch decides evaluation mode by whether the buffers exist, and updates only buffers that exist."""
    generator = torch.Generator().manual_seed(2)
    module = nn.BatchNorm2d(3, momentum=momentum, track_running_stats=built_with)
    reference = BatchNorm2dReference(3, momentum=momentum, track_running_stats=built_with)
    for _ in range(3):  # trained with the flag it was built with
        x = torch.randn(4, 3, 2, 2, generator=generator) * 2 + 3
        assert_close(reference(x), module(x))
    module.track_running_stats = reference.track_running_stats = not built_with  # the attribute, set afterwards
    for _ in range(3):
        x = torch.randn(4, 3, 2, 2, generator=generator) * 2 + 3
        assert_close(reference(x), module(x))
        assert_same_state(reference, module)
    x = torch.randn(2, 3, 2, 2, generator=generator)
    assert_close(reference.eval()(x), module.eval()(x))
    uses_batch_statistics = torch.allclose(module(x), normalize_per_channel(x), atol=1e-5)
    assert uses_batch_statistics == (not built_with)  # buffers exist exactly when built with True
    assert_same_state(reference, module)


def test_momentum_none_is_the_plain_average_of_the_batch_statistics():
    generator = torch.Generator().manual_seed(1)
    batches = [torch.randn(5, 2, 3, 3, generator=generator) * (k + 1) + k for k in range(4)]
    reference = BatchNorm2dReference(2, momentum=None)
    for x in batches:
        reference(x)
    assert_close(reference.running_mean, torch.stack([x.mean((0, 2, 3)) for x in batches]).mean(0))
    assert_close(reference.running_var, torch.stack([x.var((0, 2, 3)) for x in batches]).mean(0))


def test_from_module_copies_settings_mode_and_state_without_sharing():
    module = nn.BatchNorm2d(2, eps=0.1, momentum=None, affine=True)
    module(torch.randn(3, 2, 2, 2))
    module.eval()
    reference = BatchNorm2dReference.from_module(module)
    assert (reference.eps, reference.momentum, reference.training) == (0.1, None, False)
    assert_same_state(reference, module)
    reference.running_mean += 1
    assert not torch.equal(reference.running_mean, module.running_mean)
    no_stats = BatchNorm2dReference.from_module(nn.BatchNorm2d(2, affine=False, track_running_stats=False))
    assert no_stats.weight is None and no_stats.running_var is None and no_stats.num_batches_tracked is None
    with pytest.raises(TypeError, match="nn.BatchNorm2d, not Conv2d"):
        BatchNorm2dReference.from_module(nn.Conv2d(2, 2, 1))


def test_no_grad_does_not_stop_the_update_and_eval_does():
    x = torch.randn(4, 3, 2, 2)
    module, reference = nn.BatchNorm2d(3), BatchNorm2dReference(3)
    with torch.no_grad():
        module(x)
    reference(x)
    assert_same_state(reference, module)
    assert int(module.num_batches_tracked) == 1
    module.eval()
    module(x)
    assert int(module.num_batches_tracked) == 1


def test_statistics_are_per_channel_over_batch_height_and_width():
    x = torch.randn(4, 3, 5, 6, dtype=torch.float64)
    mean, variance = channel_statistics(x)
    want_var, want_mean = torch.var_mean(x, dim=(0, 2, 3), unbiased=False)
    assert mean.shape == variance.shape == (3,)
    assert_close(mean, want_mean)
    assert_close(variance, want_var)
    for eps in (1e-5, 0.5):
        assert_close(normalize_per_channel(x, eps), F.batch_norm(x, None, None, training=True, eps=eps))
        assert_close(normalize_per_channel(x, eps), nn.BatchNorm2d(3, eps=eps, affine=False).double()(x))


def test_per_position_statistics_are_not_what_batchnorm2d_does():
    x = torch.randn(4, 3, 5, 5)
    per_position = normalize_per_position(x)
    by_hand = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + 1e-5)
    assert_close(per_position, by_hand)
    assert not torch.allclose(per_position, nn.BatchNorm2d(3)(x), atol=1e-3)
    single_position = torch.randn(4, 3, 1, 1)  # with a 1x1 feature map both readings agree
    assert_close(normalize_per_position(single_position), normalize_per_channel(single_position))


def test_one_value_per_channel_is_rejected_in_training_only_like_torch():
    x = torch.randn(1, 3, 1, 1)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm2d(3)(x)
    with pytest.raises(ValueError, match="at least 2 samples"):
        BatchNorm2dReference(3)(x)
    assert_close(BatchNorm2dReference(3).eval()(x), nn.BatchNorm2d(3).eval()(x))
    with pytest.raises(ValueError, match="more than 1 value per channel"):  # no running estimates: batch statistics
        nn.BatchNorm2d(3, track_running_stats=False).eval()(x)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        BatchNorm2dReference(3, track_running_stats=False).eval()(x)
    wide = torch.randn(1, 3, 1, 2)  # one sample but two values per channel is enough
    assert_close(BatchNorm2dReference(3)(wide), nn.BatchNorm2d(3)(wide))


@pytest.mark.parametrize(
    ("x", "fix"),
    [
        (torch.randn(2, 4, 3, 3), "num_features=4"),
        (torch.randn(3, 3, 3), "x.unsqueeze(0)"),
        (torch.randn(4, 3), "BatchNorm1d"),
    ],
)
def test_wrong_inputs_are_rejected_like_torch_with_a_fix(x, fix):
    with pytest.raises((RuntimeError, ValueError)):
        nn.BatchNorm2d(3)(x)
    with pytest.raises(ValueError, match=re.escape(fix)):
        BatchNorm2dReference(3)(x)


def test_inputs_torch_skips_checking_are_rejected_on_purpose():
    """The lesson's two deliberate input differences: a channel count nothing checks, and an empty training batch."""
    weightless = nn.BatchNorm2d(3, affine=False, track_running_stats=False)  # neither weight nor running_mean
    four_channels = torch.randn(2, 4, 5, 5)
    assert weightless(four_channels).shape == (2, 4, 5, 5)
    with pytest.raises(ValueError, match="num_features=4"):
        BatchNorm2dReference.from_module(weightless)(four_channels)
    counting = nn.BatchNorm2d(3)
    empty = torch.randn(0, 3, 5, 5)
    assert counting(empty).shape == (0, 3, 5, 5) and counting.num_batches_tracked.item() == 1
    with pytest.raises(ValueError, match="at least 2 samples"):
        BatchNorm2dReference.from_module(nn.BatchNorm2d(3))(empty)
    assert_close(BatchNorm2dReference(3).eval()(empty), nn.BatchNorm2d(3).eval()(empty))  # evaluation mode: both run


@pytest.mark.parametrize(
    ("call", "error", "fix"),
    [
        (lambda: BatchNorm2dReference(3)(torch.ones(2, 3, 2, 2, dtype=torch.long)), TypeError, "x.float()"),
        (lambda: BatchNorm2dReference(3)([[1.0]]), TypeError, "tensor of shape (N, C, H, W)"),
        (lambda: channel_statistics(torch.randn(2, 3)), ValueError, "4-d input"),
        (lambda: BatchNorm2dReference(3, momentum=-0.1), ValueError, "weight of the NEW batch statistic"),
        (lambda: BatchNorm2dReference(3.0), TypeError, "num_features (the number of channels C) must be an int"),
        (lambda: BatchNorm2dReference(0), ValueError, "must be at least 1"),
        (lambda: BatchNorm2dReference(3, eps=0.0), ValueError, "such as 1e-5"),
        (lambda: BatchNorm2dReference(3, track_running_stats=None), TypeError, "track_running_stats must be"),
        (lambda: BatchNorm2dReference(3).train("eval"), TypeError, "True or False"),
    ],
)
def test_bad_arguments_name_the_fix(call, error, fix):
    with pytest.raises(error, match=re.escape(fix)):
        call()


def test_running_mean_history_starts_at_zero_and_follows_the_update_rule():
    generator = torch.Generator().manual_seed(2)
    batches = torch.randn(6, 8, 1, 3, 3, generator=generator) + 3
    batch_means = batches.mean(dim=(1, 2, 3, 4))
    cumulative = running_mean_history(None, batches)
    assert len(cumulative) == 7 and cumulative[0] == 0.0
    assert cumulative[-1] == pytest.approx(batch_means.mean().item(), abs=1e-5)
    assert running_mean_history(1.0, batches)[-1] == pytest.approx(batch_means[-1].item(), abs=1e-5)
    assert running_mean_history(0.1, batches)[1] == pytest.approx(0.1 * batch_means[0].item(), abs=1e-6)


def test_plot_draws_one_line_per_history_and_the_true_mean():
    use_course_style()
    fig = plot_running_means({"momentum 0.1": [0.0, 0.3, 0.57], "cumulative": [0.0, 3.0, 2.9]}, true_mean=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing Chinese glyph would warn
        fig.canvas.draw()
    (ax,) = fig.axes
    assert [line.get_label() for line in ax.lines] == ["momentum 0.1", "cumulative", "true mean / 真实均值 = 3"]
    assert list(ax.lines[1].get_ydata()) == [0.0, 3.0, 2.9]
    assert "滑动均值" in ax.get_ylabel()
    assert fig.get_size_inches()[0] <= COLUMN_WIDTH
    plt.close(fig)


def normalize_over(x, dims):
    """Subtract the mean and divide by the standard deviation (biased, eps 1e-5) over `dims` of x."""
    variance, mean = torch.var_mean(x, dim=dims, correction=0, keepdim=True)
    return (x - mean) / torch.sqrt(variance + 1e-5)


NORM_CASES = {  # layer, its statistics written as a reduction checked against torch, the cells sharing x[0, -1, 0, 0]'s
    "BatchNorm2d(6)": (
        nn.BatchNorm2d(6),
        lambda x: normalize_over(x, (0, 2, 3)),
        lambda mask: mask[:, 5].fill_(True),
    ),
    "LayerNorm([6, 2, 2])": (
        nn.LayerNorm([6, 2, 2]),
        lambda x: normalize_over(x, (1, 2, 3)),
        lambda mask: mask[0].fill_(True),
    ),
    "InstanceNorm2d(6)": (
        nn.InstanceNorm2d(6),
        lambda x: normalize_over(x, (2, 3)),
        lambda mask: mask[0, 5].fill_(True),
    ),
    "GroupNorm(3, 6)": (
        nn.GroupNorm(3, 6),
        lambda x: normalize_over(x.reshape(4, 3, 2, 2, 2), (2, 3, 4)).reshape(x.shape),  # (N, G, C/G, H, W)
        lambda mask: mask[0, 4:6].fill_(True),
    ),
}


@pytest.mark.parametrize("name", list(NORM_CASES))
def test_normalized_together_are_the_values_pytorchs_layer_reduces_over(name):
    layer, by_reduction, share = NORM_CASES[name]
    x = torch.randn(4, 6, 2, 2, dtype=torch.float64)
    assert_close(copy.deepcopy(layer).double()(x), by_reduction(x))  # the reduction is what the layer computes
    want = torch.zeros(4, 6, 2, 2, dtype=torch.bool)
    share(want)
    assert torch.equal(normalized_together(layer, (4, 6, 2, 2)), want)
    if isinstance(layer, nn.BatchNorm2d):
        assert layer.num_batches_tracked.item() == 0  # probed on a copy: the layer itself did not train


def test_normalized_together_follows_the_groups_on_other_shapes():
    assert (
        normalized_together(nn.GroupNorm(2, 6), (3, 6, 1, 2))[0].flatten(1).all(1).tolist() == [False] * 3 + [True] * 3
    )
    assert normalized_together(nn.GroupNorm(2, 6), (3, 6, 1, 2))[1:].sum() == 0
    assert normalized_together(nn.BatchNorm2d(2), (5, 2, 3, 1)).sum((0, 2, 3)).tolist() == [0, 15]


def test_plot_norm_groups_shades_what_each_layer_normalises_together():
    use_course_style()
    layers = {name: layer for name, (layer, _, _) in NORM_CASES.items()}
    fig = plot_norm_groups(layers, (4, 6, 2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing Chinese glyph would warn
        fig.canvas.draw()
    assert fig.get_figwidth() <= COLUMN_WIDTH
    assert fig.get_layout_engine() is not None  # constrained layout
    for ax, (name, (layer, _, _)) in zip(fig.axes, NORM_CASES.items(), strict=True):
        mask = normalized_together(layer, (4, 6, 2, 2)).reshape(4, 6, 4)  # (N, C, H·W)
        assert len(ax.patches) == 6 * 4 + 4 * 6 + 4 * 4  # the cube's front, top and side faces
        for patch in ax.patches:
            n, c, k = map(int, patch.get_gid().split(","))
            assert (patch.get_facecolor() != (1.0, 1.0, 1.0, 1.0)) == bool(mask[n, c, k]), (name, n, c, k)
        count = int(mask.sum())
        assert ax.get_title() == f"{name}\n{count} values share a mean / {count} 个值共用一个均值"
        labels = [text.get_text() for text in ax.texts]
        assert labels == ["C channels / 通道", "H·W positions / 位置", "N samples / 样本"]
        assert all(text.get_fontsize() >= 10 for text in ax.texts) and ax.title.get_fontsize() >= 10
    assert [int(normalized_together(layer, (4, 6, 2, 2)).sum()) for layer, _, _ in NORM_CASES.values()] == [
        16,
        24,
        4,
        8,
    ]
    plt.close(fig)


def right_group_norm(x, groups, eps):
    variance, mean = torch.var_mean(x.reshape(x.shape[0], groups, -1), dim=-1, correction=0, keepdim=True)
    return ((x.reshape(x.shape[0], groups, -1) - mean) / (variance + eps).sqrt()).reshape(x.shape)


def mutating_group_norm(x, groups, eps):
    result = right_group_norm(x, groups, eps)
    x.zero_()
    return result


def right_fuse(conv, bn):
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
    return (conv.weight * scale.view(-1, 1, 1, 1)).detach(), ((bias - bn.running_mean) * scale + bn.bias).detach()


def mutating_fuse(conv, bn):
    weight, bias = right_fuse(conv, bn)
    bn.running_mean.zero_()
    return weight, bias


def fuse_in_train_mode(conv, bn):
    bn.train()
    return right_fuse(conv, bn)


def test_checkers_pass_other_right_answers(capsys):
    check_group_norm(right_group_norm)
    check_fuse_conv_bn(right_fuse)
    check_fuse_conv_bn(lambda conv, bn: list(right_fuse(conv, bn)))
    out = capsys.readouterr().out
    assert out.count(PASS_MARK) == 3


def test_group_norm_check_leaves_pytorchs_group_norm_working_afterwards():
    with pytest.raises(WrongAnswer, match="switches those off"):
        check_group_norm(lambda x, g, eps: torch.group_norm(x, g, None, None, eps))
    x = torch.randn(2, 4, 3, 3)
    assert torch.equal(F.group_norm(x, 2), nn.GroupNorm(2, 4, affine=False)(x))


@pytest.mark.parametrize(
    ("check", "wrong", "hint"),
    [
        (check_group_norm, right_group_norm(torch.randn(2, 4, 1, 1), 2, 1e-5), "without ()"),
        (check_group_norm, lambda x, g, eps: right_group_norm(x, g, eps).tolist(), "should return a tensor"),
        (check_group_norm, mutating_group_norm, "changed its argument number 1"),
        (check_group_norm, lambda x, g, eps: right_group_norm(x, g, eps).flatten(1), "reshape back"),
        (check_group_norm, lambda x, g, eps: F.layer_norm(x, x.shape[1:], eps=eps) * 2, "does not match"),
        (check_group_norm, lambda x, g, eps: F.group_norm(x, g, eps=eps), "switches those off"),
        (check_group_norm, lambda x, g, eps: torch.group_norm(x, g, None, None, eps), "switches those off"),
        (check_group_norm, lambda x, g, eps: nn.GroupNorm(g, x.shape[1], eps=eps, affine=False)(x), "switches those"),
        (check_group_norm, lambda x, g, eps: right_group_norm(x, g, eps).half(), "keeps its input's dtype"),
        (check_fuse_conv_bn, lambda conv, bn: conv.weight, "pair of tensors"),
        (check_fuse_conv_bn, mutating_fuse, "changed its argument number 2"),
        (check_fuse_conv_bn, fuse_in_train_mode, "a module's mode"),
        (check_fuse_conv_bn, lambda conv, bn: (conv.weight[:, :1], bn.bias), "keeps the conv's shape"),
        (check_fuse_conv_bn, lambda conv, bn: (conv.weight, bn.bias), "does not give bn(conv(x))"),
    ],
)
def test_checkers_reject_other_wrong_answers_with_a_hint(check, wrong, hint):
    with pytest.raises(WrongAnswer, match=re.escape(hint)):
        check(wrong)


# Wrong calls and the fix each error names (tests/test_bad_inputs.py runs every file's BAD_CALLS)
BAD_CALLS = [
    bad(
        batchnorm.channel_statistics,
        ([[1.0, 2.0]],),
        TypeError,
        "the input must be a tensor of shape (N, C, H, W)",
        "list",
    ),
    bad(
        batchnorm.channel_statistics,
        (FEATURES[0],),
        ValueError,
        "for a single image add the batch dimension with x.unsqueeze(0)",
        "one-image",
    ),
    bad(batchnorm.channel_statistics, (torch.randn(8, 3),), ValueError, "for (N, C) use BatchNorm1d", "2d"),
    bad(
        batchnorm.channel_statistics,
        (FEATURES.long(),),
        TypeError,
        "must hold floating-point numbers, not torch.int64: use x.float()",
        "int",
    ),
    bad(
        batchnorm.normalize_per_channel,
        (FEATURES[0],),
        ValueError,
        "add the batch dimension with x.unsqueeze(0)",
        "one-image",
    ),
    bad(
        batchnorm.normalize_per_channel,
        (FEATURES,),
        ValueError,
        "eps must be a small positive number such as 1e-5",
        "negative-eps",
        eps=-1.0,
    ),
    bad(
        batchnorm.normalize_per_position,
        (FEATURES.long(),),
        TypeError,
        "must hold floating-point numbers, not torch.int64: use x.float()",
        "int",
    ),
    bad(batchnorm.normalize_per_position, (torch.randn(8, 3),), ValueError, "for (N, C) use BatchNorm1d", "2d"),
    bad(
        batchnorm.BatchNorm2dReference,
        ("3",),
        TypeError,
        "num_features (the number of channels C) must be an int such as 1",
        "str-features",
    ),
    bad(
        batchnorm.BatchNorm2dReference,
        (0,),
        ValueError,
        "num_features (the number of channels C) must be at least 1",
        "no-features",
    ),
    bad(
        batchnorm.BatchNorm2dReference,
        (3,),
        ValueError,
        "eps must be a small positive number such as 1e-5",
        "zero-eps",
        eps=0,
    ),
    bad(
        batchnorm.BatchNorm2dReference,
        (3,),
        TypeError,
        "momentum must be a number such as 0.1 (in [0, 1]) or None",
        "str-momentum",
        momentum="0.1",
    ),
    bad(
        batchnorm.BatchNorm2dReference,
        (3,),
        ValueError,
        "pass None for a cumulative average",
        "momentum-above-1",
        momentum=1.5,
    ),
    bad(batchnorm.BatchNorm2dReference, (3,), TypeError, "affine must be True or False", "str-affine", affine="yes"),
    bad(
        batchnorm.BatchNorm2dReference,
        (3,),
        TypeError,
        "track_running_stats must be True or False",
        "int-flag",
        track_running_stats=1,
    ),
    bad(
        batchnorm.BatchNorm2dReference.from_module,
        (nn.BatchNorm1d(3),),
        TypeError,
        "from_module copies an nn.BatchNorm2d",
        "batchnorm1d",
    ),
    bad(BN3.train, ("eval",), TypeError, "mode must be True or False", "str-mode"),
    bad(
        BN3.__call__,
        (torch.randn(2, 4, 3, 3),),
        ValueError,
        "build it with num_features=4, or check which dimension holds the channels (it must be dimension 1)",
        "channels",
    ),
    bad(
        BN3.__call__,
        (torch.randn(1, 3, 1, 1),),
        ValueError,
        "use a batch of at least 2 samples (or a larger feature map), or call eval() first",
        "one-value-per-channel",
    ),
]
