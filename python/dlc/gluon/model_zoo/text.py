"""BERT and GPT-2 (``gluon.model_zoo.text``) on dlc's transformer layers, loading the
Hugging Face checkpoint of the same configuration:

    net = text.from_pretrained("bert-base-uncased/")   # config.json and model.safetensors
    gpt = text.gpt2_small()                            # random weights to initialize
    gpt.initialize(init.Normal(0.02))
    logits = gpt(ids)                                   # (batch, length, vocab)

``huggingface_name(family, entry)`` is the name map: where a Hugging Face entry goes.
"""
from ..._dlc.gluon.model_zoo.text import (BertModel, GPT2Model, from_pretrained, get_model,
                                          huggingface_name, model_names)


def _constructor(name):
    def make():
        return get_model(name)
    make.__name__ = name
    make.__doc__ = f"get_model({name!r})"
    return make


for _name in model_names():
    globals()[_name] = _constructor(_name)

__all__ = ["BertModel", "GPT2Model", "from_pretrained", "get_model", "huggingface_name",
           "model_names"] + list(model_names())
