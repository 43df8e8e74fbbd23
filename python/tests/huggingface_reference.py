"""A BERT, GPT-2 or ViT checkpoint of `transformers` with random weights, and what that library
computes with it: writes OUT/config.json and OUT/model.safetensors (save_pretrained) and
OUT/expected.safetensors holding the inputs ("input.*"), the outputs ("output.*") and the
gradient of every parameter ("grad." + its Hugging Face name) of the loss
sum(output * weights) (one "input.weights_*" per output). Runs in bench/.venv; the
committed fixtures under unittests/Gluon/Inputs/huggingface are its output
(python/tests/test_text_zoo.py runs it on larger configurations).

    python huggingface_reference.py --family bert --out DIR [--set hidden_size=64 ...]

A ViT (ViTForImageClassification) takes random images ("input.images", batch x 3 x
image_size x image_size) and gives "output.sequence" (the final layer norm's output) and
"output.logits".
"""
import argparse
import json

import torch
from safetensors.torch import load_file, save_file


def parse_settings(pairs):
    settings = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        settings[key] = json.loads(value)
    return settings


def build(family, settings):
    import transformers
    if family == "bert":
        config = transformers.BertConfig(hidden_dropout_prob=0.0,
                                         attention_probs_dropout_prob=0.0, **settings)
        config._attn_implementation = "eager"
        return transformers.BertModel(config)
    if family == "vit":
        config = transformers.ViTConfig(hidden_dropout_prob=0.0,
                                        attention_probs_dropout_prob=0.0, **settings)
        config._attn_implementation = "eager"
        return transformers.ViTForImageClassification(config)
    config = transformers.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **settings)
    config._attn_implementation = "eager"
    return transformers.GPT2LMHeadModel(config)


def weighted_loss_backward(inputs, outputs, generator):
    """Backward of sum(output * weights) over the outputs; the inputs, weights and outputs
    as the tensors to save."""
    loss = 0
    for name, value in outputs.items():
        weights = torch.empty_like(value).uniform_(-1, 1, generator=generator)
        inputs["input.weights_" + name] = weights
        loss = loss + (value * weights).sum()
    loss.backward()
    tensors = dict(inputs)
    tensors.update({"output." + k: v.detach().contiguous() for k, v in outputs.items()})
    return tensors


def run_vit(args, model, generator):
    config = model.config
    size = config.image_size
    images = torch.randn((args.batch, config.num_channels, size, size), generator=generator)
    sequence = model.vit(pixel_values=images).last_hidden_state
    logits = model.classifier(sequence[:, 0, :])
    tensors = weighted_loss_backward({"input.images": images},
                                     {"sequence": sequence, "logits": logits}, generator)
    model.save_pretrained(args.out, safe_serialization=True)
    # transformers 5 names a ViT's parameters in memory otherwise than in its file; every
    # parameter is perturbed differently, so its values find its file name.
    saved = load_file(f"{args.out}/model.safetensors")
    for name, p in model.named_parameters():
        matches = [k for k, v in saved.items() if v.shape == p.shape and torch.equal(v, p.detach())]
        if len(matches) != 1:
            raise SystemExit(f"{name}: {len(matches)} entries of the file hold its values")
        tensors["grad." + matches[0]] = p.grad.detach().contiguous()
    save_file(tensors, f"{args.out}/expected.safetensors")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", choices=["bert", "gpt2", "vit"], required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--set", nargs="*", default=[], help="config settings, key=json")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--length", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = build(args.family, parse_settings(args.set))
    # Every parameter perturbed: biases and layer norms start at 0 and 1, which would
    # hide a wrongly mapped one.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.empty_like(p).uniform_(-0.05, 0.05))
    model.eval()
    config = model.config
    generator = torch.Generator().manual_seed(args.seed + 1)
    if args.family == "vit":
        run_vit(args, model, generator)
        return
    shape = (args.batch, args.length)
    # Not the padding token: BERT's embedding never updates that row (PyTorch's
    # padding_idx), dlc's updates every row it reads, as MXNet's does.
    low = 1 if getattr(config, "pad_token_id", None) == 0 else 0
    ids = torch.randint(low, config.vocab_size, shape, generator=generator)
    mask = torch.ones(shape, dtype=torch.int64)
    if args.batch > 1:
        mask[1, args.length - 3:] = 0  # right padding in the second sequence
    inputs = {"input.ids": ids, "input.mask": mask}
    if args.family == "bert":
        types = torch.randint(0, config.type_vocab_size, shape, generator=generator)
        inputs["input.token_types"] = types
        result = model(input_ids=ids, token_type_ids=types, attention_mask=mask)
        outputs = {"sequence": result.last_hidden_state, "pooled": result.pooler_output}
    else:
        result = model(input_ids=ids, attention_mask=mask)
        outputs = {"logits": result.logits}
    tensors = weighted_loss_backward(inputs, outputs, generator)
    # The checkpoint's own names: save_pretrained's file is what dlc loads.
    model.save_pretrained(args.out, safe_serialization=True)
    for name, p in model.named_parameters():
        if args.family == "gpt2":
            name = name.removeprefix("transformer.")
        tensors["grad." + name] = p.grad.detach().contiguous()
    save_file(tensors, f"{args.out}/expected.safetensors")


if __name__ == "__main__":
    main()
