//===- HuggingFaceNames.cpp - Hugging Face's parameter names in dlc's networks -===//
//
// One table per family: a rule's pattern matches a whole entry name of Hugging Face's
// safetensors file, its replacement is the dlc parameter the entry fills ($1... are the
// pattern's groups), or null when the network holds nothing of it. Files of the bare
// model (BertModel, GPT2Model) and of a model with heads (BertForPreTraining's "bert.",
// GPT2LMHeadModel's "transformer.", ViTForImageClassification's "vit.") both load. docs/design/transformers.md shows the
// tables.
//
//===----------------------------------------------------------------------===//
#include "dlc/Gluon/TextModels.h"

#include "dlc/Core/Error.h"

#include <regex>

namespace dlc::gluon::model_zoo::text {

namespace {

struct NameRule {
  const char *pattern;
  const char *parameter; ///< null: not a parameter of the network
  bool transpose = false;
};

struct CompiledRule {
  std::regex pattern;
  const NameRule *rule;
};

// Old BERT checkpoints name a layer norm's parameters gamma and beta.
const NameRule kBertRules[] = {
    {R"((?:bert\.)?embeddings\.word_embeddings\.weight)", "word_embed.weight"},
    {R"((?:bert\.)?embeddings\.position_embeddings\.weight)", "position_embed.weight"},
    {R"((?:bert\.)?embeddings\.token_type_embeddings\.weight)", "token_type_embed.weight"},
    {R"((?:bert\.)?embeddings\.LayerNorm\.(?:weight|gamma))", "embed_norm.gamma"},
    {R"((?:bert\.)?embeddings\.LayerNorm\.(?:bias|beta))", "embed_norm.beta"},
    {R"((?:bert\.)?embeddings\.position_ids)", nullptr},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.self\.query\.(weight|bias))",
     "layers.$1.attention.query_proj.$2"},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.self\.key\.(weight|bias))",
     "layers.$1.attention.key_proj.$2"},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.self\.value\.(weight|bias))",
     "layers.$1.attention.value_proj.$2"},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.output\.dense\.(weight|bias))",
     "layers.$1.attention.out_proj.$2"},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(?:weight|gamma))",
     "layers.$1.attention_norm.gamma"},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(?:bias|beta))",
     "layers.$1.attention_norm.beta"},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.intermediate\.dense\.(weight|bias))",
     "layers.$1.ffn_hidden.$2"},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.output\.dense\.(weight|bias))", "layers.$1.ffn_out.$2"},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.output\.LayerNorm\.(?:weight|gamma))",
     "layers.$1.ffn_norm.gamma"},
    {R"((?:bert\.)?encoder\.layer\.(\d+)\.output\.LayerNorm\.(?:bias|beta))",
     "layers.$1.ffn_norm.beta"},
    {R"((?:bert\.)?pooler\.dense\.(weight|bias))", "pooler.$1"},
    // Pre-training heads (masked words, next sentence).
    {R"(cls\..*)", nullptr},
};

// GPT-2's Conv1D layers store their weights (in, out), transposed from Dense's.
const NameRule kGPT2Rules[] = {
    {R"((?:transformer\.)?wte\.weight)", "word_embed.weight"},
    {R"((?:transformer\.)?wpe\.weight)", "position_embed.weight"},
    {R"((?:transformer\.)?h\.(\d+)\.ln_1\.weight)", "layers.$1.attention_norm.gamma"},
    {R"((?:transformer\.)?h\.(\d+)\.ln_1\.bias)", "layers.$1.attention_norm.beta"},
    {R"((?:transformer\.)?h\.(\d+)\.attn\.c_attn\.weight)", "layers.$1.attention.qkv_proj.weight",
     true},
    {R"((?:transformer\.)?h\.(\d+)\.attn\.c_attn\.bias)", "layers.$1.attention.qkv_proj.bias"},
    {R"((?:transformer\.)?h\.(\d+)\.attn\.c_proj\.weight)", "layers.$1.attention.out_proj.weight",
     true},
    {R"((?:transformer\.)?h\.(\d+)\.attn\.c_proj\.bias)", "layers.$1.attention.out_proj.bias"},
    {R"((?:transformer\.)?h\.(\d+)\.ln_2\.weight)", "layers.$1.ffn_norm.gamma"},
    {R"((?:transformer\.)?h\.(\d+)\.ln_2\.bias)", "layers.$1.ffn_norm.beta"},
    {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_fc\.weight)", "layers.$1.ffn_hidden.weight", true},
    {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_fc\.bias)", "layers.$1.ffn_hidden.bias"},
    {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_proj\.weight)", "layers.$1.ffn_out.weight", true},
    {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_proj\.bias)", "layers.$1.ffn_out.bias"},
    {R"((?:transformer\.)?ln_f\.weight)", "final_norm.gamma"},
    {R"((?:transformer\.)?ln_f\.bias)", "final_norm.beta"},
    // The causal mask buffers of older files, and the head, tied to wte.
    {R"((?:transformer\.)?h\.(\d+)\.attn\.(?:masked_)?bias)", nullptr},
    {R"(lm_head\.weight)", nullptr},
};

// ViTForImageClassification's "vit." prefix; ViTModel's pooler is not dlc's ViT's (it
// classifies the first token's final features, as ViTForImageClassification does).
const NameRule kViTRules[] = {
    {R"((?:vit\.)?embeddings\.cls_token)", "cls_token"},
    {R"((?:vit\.)?embeddings\.position_embeddings)", "position_embed"},
    {R"((?:vit\.)?embeddings\.patch_embeddings\.projection\.(weight|bias))", "patch_embed.$1"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.attention\.attention\.query\.(weight|bias))",
     "layers.$1.attention.query_proj.$2"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.attention\.attention\.key\.(weight|bias))",
     "layers.$1.attention.key_proj.$2"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.attention\.attention\.value\.(weight|bias))",
     "layers.$1.attention.value_proj.$2"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.attention\.output\.dense\.(weight|bias))",
     "layers.$1.attention.out_proj.$2"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.layernorm_before\.weight)",
     "layers.$1.attention_norm.gamma"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.layernorm_before\.bias)", "layers.$1.attention_norm.beta"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.intermediate\.dense\.(weight|bias))",
     "layers.$1.ffn_hidden.$2"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.output\.dense\.(weight|bias))", "layers.$1.ffn_out.$2"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.layernorm_after\.weight)", "layers.$1.ffn_norm.gamma"},
    {R"((?:vit\.)?encoder\.layer\.(\d+)\.layernorm_after\.bias)", "layers.$1.ffn_norm.beta"},
    {R"((?:vit\.)?layernorm\.weight)", "final_norm.gamma"},
    {R"((?:vit\.)?layernorm\.bias)", "final_norm.beta"},
    {R"(classifier\.(weight|bias))", "head.$1"},
    {R"((?:vit\.)?pooler\..*)", nullptr},
    {R"((?:vit\.)?embeddings\.mask_token)", nullptr},
};

template <size_t N> std::vector<CompiledRule> compile(const NameRule (&rules)[N]) {
  std::vector<CompiledRule> compiled;
  for (const NameRule &rule : rules)
    compiled.push_back({std::regex(rule.pattern), &rule});
  return compiled;
}

} // namespace

std::optional<MappedName> huggingface_name(const std::string &family, const std::string &entry) {
  static const std::vector<CompiledRule> bert = compile(kBertRules);
  static const std::vector<CompiledRule> gpt2 = compile(kGPT2Rules);
  static const std::vector<CompiledRule> vit = compile(kViTRules);
  const std::vector<CompiledRule> *rules = nullptr;
  if (family == "bert")
    rules = &bert;
  else if (family == "gpt2")
    rules = &gpt2;
  else if (family == "vit")
    rules = &vit;
  else
    throw ValueError("huggingface_name: the family '" + family +
                     "' is not one of 'bert', 'gpt2' and 'vit'");
  std::smatch match;
  for (const CompiledRule &compiled : *rules) {
    if (!std::regex_match(entry, match, compiled.pattern))
      continue;
    if (!compiled.rule->parameter)
      return std::nullopt;
    return MappedName{match.format(compiled.rule->parameter), compiled.rule->transpose};
  }
  return MappedName{entry, false};
}

} // namespace dlc::gluon::model_zoo::text
