from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, GPT2LMHeadModel

from nasflow.cli import main as cli_main
from nasflow.export import ExportError, export_arch, load_exported
from nasflow.sampling import FairSampler
from nasflow.search_spaces.gpt2 import GPT2Logits, GPT2Space
from nasflow.space import Arch, rebuild_space
from nasflow.supernet import SuperModule
from nasflow.train import supernet_step

VOCAB, BLOCK = 11, 8


def tiny(**kwargs) -> GPT2Space:
    sizes = {"n_layer": (1, 2), "n_embd": (8, 16), "n_head": (1, 2), "mlp_ratio": (1, 2)}
    return GPT2Space(**{"vocab_size": VOCAB, "block_size": BLOCK, **sizes, **kwargs})


def tokens(batch: int = 3, length: int = BLOCK, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (batch, length), generator=g)


def trained_supernet(space: GPT2Space, steps: int = 3):
    """A supernet whose weights moved away from their init (equality is not trivial)."""
    torch.manual_seed(0)
    supernet = space.supernet()
    opt = torch.optim.AdamW(supernet.parameters(), lr=0.05)
    sampler = FairSampler(space, seed=0)
    supernet.train()
    for step in range(steps):
        x = tokens(8, seed=step)
        supernet_step(supernet, sampler.paths(step), x, torch.roll(x, -1, 1), opt)
    return supernet.eval()


def test_default_space_is_cpu_sized_and_records_its_config() -> None:
    space = GPT2Space()
    assert space.size == space.num_paths == 3 * 3 * 2 * 3
    assert space.labels == ("n_layer", "n_embd", "n_head", "mlp_ratio")
    assert all(c.kind == "value" for c in space.choices)
    assert space.config == {
        "vocab_size": 65,
        "block_size": 64,
        "n_layer": [2, 3, 4],
        "n_embd": [64, 96, 128],
        "n_head": [2, 4],
        "mlp_ratio": [2, 3, 4],
        "dropout": 0.0,
        "input_shape": [64],
        "input_dtype": "int64",
    }
    json.dumps(space.config)
    assert space.fingerprint() != tiny().fingerprint()


def test_the_registry_rebuilds_it_from_its_config() -> None:
    for space in (GPT2Space(), tiny(), tiny(dropout=0.1)):
        back = rebuild_space("gpt2", space.config, space.fingerprint())
        assert isinstance(back, GPT2Space) and back.config == space.config


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"vocab_size": 0}, "vocab_size must be an int >= 1, got 0"),
        ({"block_size": True}, "block_size must be an int >= 1, got True"),
        ({"n_layer": ()}, r"n_layer must be a non-empty list of ints >= 1, got \(\)"),
        ({"n_embd": (8, 2.5)}, r"n_embd must be .* got \(8, 2.5\)"),
        ({"n_head": (2, 2)}, r"n_head has duplicate values: \(2, 2\)"),
        ({"n_embd": (8, 12), "n_head": (1, 8)}, "n_embd 12 is not divisible by n_head 8"),
        ({"dropout": 1.0}, r"dropout must be a number in \[0, 1\), got 1.0"),
    ],
)
def test_bad_constructor_arguments_name_the_value(kwargs, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tiny(**kwargs)


def test_extract_is_a_gpt2_lm_head_model_with_the_supernet_logits() -> None:
    space = tiny()
    supernet = trained_supernet(space)
    rng = np.random.default_rng(1)
    archs = [space.sample(rng) for _ in range(8)] + [
        Arch({"n_layer": 1, "n_embd": 8, "n_head": 2, "mlp_ratio": 1}),  # smallest
        Arch({"n_layer": 2, "n_embd": 16, "n_head": 2, "mlp_ratio": 2}),  # largest
    ]
    for length in (BLOCK, 5):
        x = tokens(length=length)
        for arch in archs:
            with torch.no_grad():
                want = supernet(x, arch)
                net = supernet.extract(arch)
                got = net(x)
            assert want.shape == (3, length, VOCAB)
            assert isinstance(net, GPT2Logits) and not net.training
            assert not any(isinstance(m, SuperModule) for m in net.modules())
            model = space.hf_model(net)
            assert type(model) is GPT2LMHeadModel
            cfg = model.config
            assert (cfg.n_layer, cfg.n_embd, cfg.n_head, cfg.n_inner) == (
                arch["n_layer"],
                arch["n_embd"],
                arch["n_head"],
                arch["mlp_ratio"] * arch["n_embd"],
            )
            assert (got - want).abs().max().item() <= 1e-5, dict(arch)
            with torch.no_grad():  # the HF model itself, called the HF way
                hf_logits = model(input_ids=x).logits
            assert (hf_logits - want).abs().max().item() <= 1e-5


def test_smaller_choices_use_leading_slices_of_the_largest_weights() -> None:
    space = tiny()
    supernet = trained_supernet(space)
    body = supernet.body
    small = Arch({"n_layer": 1, "n_embd": 8, "n_head": 2, "mlp_ratio": 1})
    large = Arch({"n_layer": 2, "n_embd": 16, "n_head": 2, "mlp_ratio": 2})
    x = tokens()
    with torch.no_grad():
        before = {a: supernet(x, a) for a in (small, large)}
        body.wte.weight[:, 8:] += 1.0  # columns beyond width 8
        body.h[1].c_fc.weight += 1.0  # a block beyond depth 1
        body.h[0].c_attn.weight[:, 8:16] += 1.0  # q columns beyond width 8
        body.h[0].c_attn.weight[:, 16 + 8 : 32] += 1.0  # k columns beyond width 8
        body.h[0].c_fc.weight[:, 8:] += 1.0  # MLP units beyond 1 * 8
        after = {a: supernet(x, a) for a in (small, large)}
        small_net = supernet.extract(small)
    assert torch.equal(before[small], after[small])
    assert not torch.allclose(before[large], after[large])
    w = space.hf_model(small_net).transformer.h[0].attn.c_attn.weight  # (8, 24): [q | k | v]
    big = body.h[0].c_attn.weight
    assert torch.equal(w[:, 8:16], big[:8, 16:24])  # k is the leading block of k, not of q
    assert torch.equal(w[:, 16:], big[:8, 32:40])


def test_build_has_the_parameters_of_extract_and_fresh_weights() -> None:
    space = tiny()
    supernet = space.supernet()
    for arch in (space.sample(0), space.sample(1)):
        built, extracted = space.build(arch), supernet.extract(arch)
        want = {k: v.shape for k, v in extracted.state_dict().items()}
        assert {k: v.shape for k, v in built.state_dict().items()} == want
        assert type(space.hf_model(built)) is GPT2LMHeadModel
        assert built(tokens()).shape == (3, BLOCK, VOCAB)
    with pytest.raises(ValueError, match="GPT2Logits"):
        space.hf_model(torch.nn.Linear(2, 2))


def test_json_round_trip() -> None:
    space = GPT2Space()
    rng = np.random.default_rng(0)
    for _ in range(30):
        arch = space.sample(rng)
        back = Arch.from_json(arch.to_json())
        assert back == arch and space.validate(back) == arch
    with pytest.raises(ValueError, match="'n_embd'"):
        space.validate({**space.sample(0).to_dict(), "n_embd": 100})


def test_sequences_longer_than_the_block_are_refused() -> None:
    space = tiny()
    with pytest.raises(ValueError, match="sequence length 9 exceeds block_size=8"):
        space.supernet()(tokens(length=9), space.sample(0))


@pytest.mark.slow
def test_export_writes_a_hugging_face_directory(tmp_path: Path) -> None:
    space = tiny()
    supernet = trained_supernet(space)
    arch = Arch({"n_layer": 2, "n_embd": 8, "n_head": 2, "mlp_ratio": 2})
    info = export_arch(space, supernet, arch, tmp_path / "out", onnx=False)
    hf_dir = tmp_path / "out" / "hf"
    assert {"hf/config.json", "hf/model.safetensors"} <= set(info.files)
    assert info.checks["hf_max_abs_diff"] <= 1e-5
    assert "token ids" in (tmp_path / "out" / "README.md").read_text()
    model = AutoModelForCausalLM.from_pretrained(
        hf_dir, local_files_only=True, attn_implementation="eager"
    ).eval()
    assert type(model) is GPT2LMHeadModel and model.config.n_embd == 8
    x = tokens()
    with torch.no_grad():
        want = supernet(x, arch)
        assert (model(input_ids=x).logits - want).abs().max().item() <= 1e-5
        assert (load_exported(tmp_path / "out")(x) - want).abs().max().item() <= 1e-5
    (hf_dir / "extra.pkl").write_bytes(b"\x80\x04N.")  # a pickle hidden in hf/ is refused
    with pytest.raises(ExportError, match="may be a pickle"):
        load_exported(tmp_path / "out")


@pytest.mark.slow
def test_a_study_searches_it_on_a_slice_of_tinyshakespeare(shared_data_file, tmp_path) -> None:
    """Phase 1 trains the GPT-2 supernet on characters, phase 2 scores perplexity and
    token accuracy against measured training cost, phase 3 retrains the winner, and the
    winner exports with its Hugging Face directory."""
    from nasflow.data import CharVocab, load_text
    from nasflow.export import export
    from nasflow.pipeline import StudyRunner
    from nasflow.search import StudySpec
    from nasflow.train import SupernetConfig, TrainConfig

    text = shared_data_file("tinyshakespeare.txt").read_text(encoding="utf-8")[:6000]
    corpus = tmp_path / "slice.txt"
    corpus.write_text(text, encoding="utf-8")
    vocab = len(CharVocab(text))
    spec = StudySpec(
        name="gpt2",
        space=tiny(vocab_size=vocab, block_size=16),
        data=lambda: load_text(corpus, block_size=16),
        objectives=("accuracy", "perplexity", "train_cost"),
        supernet=SupernetConfig(epochs=1, batch_size=32),
        n_trials=3,
        bn_batches=1,
        train=TrainConfig(epochs=1, batch_size=32),
        cost="measure",
    )
    runs = tmp_path / "runs"
    result = StudyRunner(spec, out_dir=runs, progress=False, log=lambda _: None).run()
    info = result.study.user_attrs["nasflow:supernet"]
    assert info["paths_per_step"] == 2 and all(np.isfinite(info["losses"]))
    done = result.study.get_trials()
    assert len(done) == 3 and all(t.state.name == "COMPLETE" for t in done)
    for t in done:
        acc, ppl, cost = t.values
        assert 0.0 <= acc <= 1.0 and t.user_attrs["supernet_accuracy"] == acc
        assert 1.0 < ppl < 2 * vocab  # barely trained: near uniform over the characters
        assert cost > 0
    assert result.winners and 0.0 <= result.winners[0].test_accuracy <= 1.0
    (exported,) = export("gpt2", tmp_path / "export", runs=runs, spec=spec, onnx=False)
    assert "hf/model.safetensors" in exported.files
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "export" / "hf", local_files_only=True)
    assert type(model) is GPT2LMHeadModel and model.config.vocab_size == vocab


def test_a_study_with_the_cost_model_is_refused_before_anything_is_written(tmp_path) -> None:
    """The cost model's op tracer cannot see sliced weights: ``cost="model"`` (the default)
    is one error at the start, naming the space and ``cost='measure'``; no run folder or
    study storage is made."""
    from nasflow.errors import ConfigError
    from nasflow.pipeline import StudyRunner
    from nasflow.search import StudySpec

    assert GPT2Space.cost_model_traceable is False

    def never() -> None:
        raise AssertionError("the data is not loaded: the refusal comes first")

    spec = StudySpec(name="gpt2-model-cost", space=tiny(), data=never, n_trials=2, bn_batches=1)
    assert spec.cost == "model"
    runs = tmp_path / "runs"
    runner = StudyRunner(spec, out_dir=runs, progress=False, log=lambda _: None)
    with pytest.raises(ConfigError, match=r"space 'gpt2'.*use cost='measure'"):
        runner.run()
    assert not runs.exists() or not any(runs.rglob("*"))


def test_a_sliced_weight_space_not_flagged_is_refused_at_the_start_too(tmp_path) -> None:
    """A user's own sliced-weight space that leaves ``cost_model_traceable`` at its default
    (here the GPT-2 space with the flag put back) is refused at the start as well, by one
    traced path, not after its supernet has trained; the same refusal as the flagged one."""
    from nasflow.cost import sees_ops
    from nasflow.errors import ConfigError
    from nasflow.pipeline import StudyRunner
    from nasflow.search import StudySpec

    class Unflagged(GPT2Space):
        cost_model_traceable = True

    space = Unflagged(vocab_size=13, block_size=8, n_layer=(1, 2), n_embd=(8, 16), n_head=(2,))
    assert space.config["input_shape"] == [8] and not sees_ops(space, [8])

    def never() -> None:
        raise AssertionError("the data is not loaded: the refusal comes first")

    spec = StudySpec(name="unflagged", space=space, data=never, n_trials=2, bn_batches=1)
    runs = tmp_path / "runs"
    runner = StudyRunner(spec, out_dir=runs, progress=False, log=lambda _: None)
    with pytest.raises(ConfigError, match=r"space 'gpt2'.*finds no op.*use cost='measure'"):
        runner.run()
    assert not runs.exists() or not any(runs.rglob("*"))


def test_the_probe_sees_the_ops_of_a_space_of_choice_modules() -> None:
    """The same probe on the ready MNIST-1D space finds its ops: such a study is not held up."""
    from nasflow.cost import sees_ops
    from nasflow.search_spaces.mnist1d import MNIST1DFrontSpace

    space = MNIST1DFrontSpace()
    assert sees_ops(space, space.config["input_shape"])


def test_the_ready_study_file_loads(shared_data_file) -> None:
    from nasflow.search import load_study_file

    text = shared_data_file("tinyshakespeare.txt").read_text(encoding="utf-8")
    spec = load_study_file(Path(__file__).parents[2] / "studies" / "gpt2_shakespeare.py")
    assert isinstance(spec.space, GPT2Space)
    assert spec.space.vocab_size == len(set(text)) == 65
    assert spec.objectives == ("accuracy", "perplexity", "train_cost")
    assert math.isclose(spec.space.dropout, 0.0)


def test_nasflow_spaces_lists_it(capsys) -> None:
    assert cli_main(["spaces"]) == 0
    assert "gpt2\tnasflow.search_spaces.gpt2:GPT2Space" in capsys.readouterr().out.splitlines()
    assert cli_main(["spaces", "gpt2"]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("gpt2\t"))
    assert "54 architectures" in line and "GPT-2" in line
