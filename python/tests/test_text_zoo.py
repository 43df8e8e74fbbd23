"""gluon.model_zoo.text from Python: BERT, GPT-2 and the vision zoo's ViT give what
`transformers` computes with the same weights (outputs to 1e-4, parameter gradients to
1e-3 of each tensor's scale),
eagerly and hybridized. The committed checkpoints (unittests/Gluon/Inputs/huggingface)
always run; where bench/.venv has transformers, the zoo's small configurations run too,
with weights and results that library writes for the test (huggingface_reference.py)."""
import subprocess

import numpy as onp
import pytest

from conftest import HUGGINGFACE_FIXTURES, SOURCE_DIR
from dlc import autograd, gluon, init, np, npx
from dlc.gluon.model_zoo import text, vision
from test_mxnet_parity import VENV_PYTHON


def transformers_available():
    if not VENV_PYTHON.exists():
        return False
    return subprocess.run([str(VENV_PYTHON), "-c", "import transformers, safetensors"],
                          capture_output=True).returncode == 0


def assert_close(got, want, tolerance, what, floor=1e-3):
    # A floor for values near zero: below it both sides are rounding.
    scale = max(float(onp.abs(want).max()), floor)
    err = float(onp.abs(got - want).max())
    assert err <= tolerance * scale, f"{what}: max error {err:.3g}, scale {scale:.3g}"


def check_checkpoint(folder, hybridize):
    want = {k: v.asnumpy() for k, v in npx.load(str(folder / "expected.safetensors")).items()}
    net = text.from_pretrained(str(folder))
    family = ("bert" if isinstance(net, text.BertModel) else
              "vit" if isinstance(net, vision.VisionTransformer) else "gpt2")
    if hybridize:
        net.hybridize()
    with autograd.record():
        if family == "vit":
            images = np.array(want["input.images"])
            outputs = {"sequence": net.features(images), "logits": net(images)}
        elif family == "bert":
            ids, mask = np.array(want["input.ids"]), np.array(want["input.mask"])
            outputs = dict(zip(("sequence", "pooled"),
                               net(ids, np.array(want["input.token_types"]), mask)))
        else:
            ids, mask = np.array(want["input.ids"]), np.array(want["input.mask"])
            outputs = {"logits": net(ids, mask)}
        loss = sum((out * np.array(want["input.weights_" + name])).sum()
                   for name, out in outputs.items())
    loss.backward()
    for name, out in outputs.items():
        assert_close(out.asnumpy(), want["output." + name], 1e-4, name)
    params = net.collect_params()
    checked = 0
    for key, value in want.items():
        if not key.startswith("grad."):
            continue
        parameter, transpose = text.huggingface_name(family, key[5:])
        grad = params[parameter].grad().asnumpy()
        # A key projection's bias shifts every score of a query alike, which softmax
        # ignores: its gradient is zero in exact arithmetic, and both sides hold only the
        # rounding of the sums that cancel (up to 1.2e-6 from dlc, 1.3e-7 from PyTorch,
        # on an AVX2 EPYC). It must stay that small, not match PyTorch's noise.
        floor = 1e-2 if key.endswith("attention.self.key.bias") else 1e-3
        assert_close(grad.T if transpose else grad, value, 1e-3, "gradient of " + key[5:],
                     floor)
        checked += 1
    assert checked == len(params)


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("checkpoint", ["bert-tiny", "gpt2-tiny", "vit-tiny"])
def test_committed_checkpoints_give_transformers_results(checkpoint, hybridize):
    check_checkpoint(HUGGINGFACE_FIXTURES / checkpoint, hybridize)


# The zoo's small configurations, as Hugging Face's config settings.
SMALL = {
    "bert": ["hidden_size=512", "num_hidden_layers=4", "num_attention_heads=8",
             "intermediate_size=2048"],
    "gpt2": ["vocab_size=256", "n_embd=256", "n_layer=4", "n_head=4", "n_positions=256",
             "bos_token_id=0", "eos_token_id=0"],
    # ViT-B/16's patches and layer shape, narrower and shallower, on 64x64 images.
    "vit": ["image_size=64", "patch_size=16", "hidden_size=192", "num_hidden_layers=3",
            "num_attention_heads=3", "intermediate_size=768", "num_labels=10"],
}


@pytest.mark.skipif(not transformers_available(),
                    reason="transformers is not in bench/.venv (bench/setup-peers.sh)")
@pytest.mark.parametrize("family", ["bert", "gpt2", "vit"])
def test_small_configurations_give_transformers_results(family, tmp_path):
    result = subprocess.run(
        [str(VENV_PYTHON), str(SOURCE_DIR / "python" / "tests" / "huggingface_reference.py"),
         "--family", family, "--out", str(tmp_path), "--length", "24", "--set", *SMALL[family]],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    config = text.from_pretrained(str(tmp_path)).config
    if family == "vit":
        assert (config["units"], config["num_layers"], config["classes"]) == (192, 3, 10)
    else:
        zoo = text.get_model(family + "_small").config
        for key in ("units", "num_layers", "num_heads", "vocab_size"):
            assert config[key] == zoo[key], key
    check_checkpoint(tmp_path, hybridize=True)


def test_zoo_names_configs_and_errors(tmp_path):
    assert text.model_names() == ["bert_base", "bert_small", "gpt2_124m", "gpt2_small"]
    assert text.bert_small().config["units"] == 512
    gpt = text.GPT2Model(vocab_size=32, units=16, num_layers=1, num_heads=2, max_length=8)
    assert gpt.config["hidden_size"] == 64
    gpt.initialize(init.Normal(0.02))
    ids = np.array([[1, 2, 3]], dtype="int64")
    assert gpt(ids).shape == (1, 3, 32)
    assert gpt.features(ids).shape == (1, 3, 16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_embd'"):
        text.GPT2Model(n_embd=16)
    with pytest.raises(ValueError, match="known: bert_base"):
        text.get_model("bert_large")
    assert text.huggingface_name("gpt2", "h.0.mlp.c_fc.weight") == ("layers.0.ffn_hidden.weight",
                                                                    True)
    assert text.huggingface_name("bert", "cls.predictions.bias") is None
    with pytest.raises(Exception, match="is in the file but not in the network"):
        gpt.load_huggingface(str(HUGGINGFACE_FIXTURES / "bert-tiny" / "model.safetensors"))
    with pytest.raises(Exception, match="config.json"):
        text.from_pretrained(str(tmp_path))
    vit = vision.vit_b_16(classes=10)
    assert isinstance(vit, vision.VisionTransformer)
    assert vit.config["patch_size"] == 16 and vit.head is not None
    with pytest.raises(ValueError, match="from_pretrained"):
        vision.vit_b_16(pretrained=True)


def test_gpt2_trains_as_a_language_model():
    gpt = text.GPT2Model(vocab_size=16, units=32, num_layers=1, num_heads=2, max_length=16,
                         dropout=0.0, attention_dropout=0.0)
    gpt.initialize(init.Normal(0.02))
    gpt.hybridize()
    seq = np.array(onp.tile(onp.arange(8), (4, 3))[:, :13], dtype="int64")
    x, y = seq[:, :12], seq[:, 1:]
    trainer = gluon.Trainer(gpt.collect_params(), "adam", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _ in range(25):
        with autograd.record():
            loss = loss_fn(gpt(x), y)
        loss.backward()
        trainer.step(4)
        losses.append(float(loss.mean().asnumpy()))
    assert losses[-1] < 0.3 * losses[0], losses
