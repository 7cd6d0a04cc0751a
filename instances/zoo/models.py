"""The zoo's architectures: real models built from their definitions with random weights.

Each entry names a model, its family, the call that builds it and the example inputs it
is exported with (batch 1, fixed shapes). Nothing is downloaded: torchvision models take
`weights=None`, timm models `pretrained=False`, and transformers models are built by
`from_config` from a config written here. Building needs the dev-only extra
`memplace[zoo]` (torch, torchvision, timm, transformers); this module imports them only
inside the builders, so listing the zoo needs none of them.

Decoders come twice: *prefill* (a 128-token prompt, returning the logits and the key/value
cache it writes) and *decode* (one token reading a 127-token cache passed in as tensors,
returning the logits and the grown cache), the two programs an LLM server runs. A
multi-step decode (`-decode-Nsteps`) chains N such steps into one program: each step's
greedy token (the argmax of its logits) and grown cache feed the next.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

IMAGE = (1, 3, 224, 224)
SEQ_LEN = 128  # tokens of an encoder's input and of a decoder's prompt
PAST_LEN = 127  # cached tokens a decode step reads (the step makes it 128)


@dataclass(frozen=True)
class ZooModel:
    """One architecture of the zoo.

    `build()` returns `(module, inputs)`: an eval-mode `torch.nn.Module` and a dict of
    named example input tensors (in the order `forward` takes them).
    """

    name: str
    family: str
    call: str
    build: Callable[[], tuple[Any, dict[str, Any]]]
    inputs: str  # the inputs in words, e.g. "float32 image [1,3,224,224]"


def _seed() -> None:
    import torch
    torch.manual_seed(0)


def _image(shape: tuple[int, ...] = IMAGE) -> dict[str, Any]:
    import torch
    return {"image": torch.randn(*shape)}


def _tokens(n: int = SEQ_LEN, vocab: int = 1000) -> Any:
    import torch
    return torch.randint(0, vocab, (1, n), dtype=torch.long)


# ------------------------------------------------------------------ vision
def _torchvision(fn: str, shape: tuple[int, ...] = IMAGE, **kwargs: Any) -> Callable[[], Any]:
    def build() -> tuple[Any, dict[str, Any]]:
        import importlib
        path = fn.split(".")  # "video.r3d_18": a model of a torchvision.models submodule
        models = importlib.import_module(".".join(["torchvision.models", *path[:-1]]))
        _seed()
        model = getattr(models, path[-1])(weights=None, **kwargs).eval()
        return model, _image(shape)
    return build


def _first_output(fn: str, key: str, shape: tuple[int, ...] = IMAGE,
                  **kwargs: Any) -> Callable[[], Any]:
    """A torchvision model whose forward returns a dict (segmentation): its `key` entry."""
    def build() -> tuple[Any, dict[str, Any]]:
        import torch
        import torchvision

        class Output(torch.nn.Module):
            def __init__(self, model: torch.nn.Module):
                super().__init__()
                self.model = model

            def forward(self, image: torch.Tensor) -> torch.Tensor:
                return self.model(image)[key]
        _seed()
        module = getattr(torchvision.models.segmentation, fn)(weights=None, weights_backbone=None,
                                                               **kwargs)
        return Output(module).eval(), _image(shape)
    return build


def _timm(fn: str, shape: tuple[int, ...] = IMAGE) -> Callable[[], Any]:
    def build() -> tuple[Any, dict[str, Any]]:
        import timm
        _seed()
        return timm.create_model(fn, pretrained=False).eval(), _image(shape)
    return build


# ------------------------------------------------------------------ transformers
def _config(kind: str, **fields: Any) -> Any:
    import transformers
    return getattr(transformers, kind)(**fields)


class _Outputs:
    """Wrappers that give a transformers model plain tensor inputs and outputs."""

    @staticmethod
    def encoder(model: Any) -> Any:
        import torch

        class Encoder(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
                return self.model(input_ids=input_ids).last_hidden_state
        return Encoder().eval()

    @staticmethod
    def tensor_input(model: Any, keyword: str) -> Any:
        import torch

        class Encoder(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, features: torch.Tensor) -> torch.Tensor:
                return self.model(**{keyword: features}).last_hidden_state
        return Encoder().eval()

    @staticmethod
    def decoder(model: Any, layers: int, decode: bool, steps: int = 1) -> Any:
        """Prefill: `input_ids` -> logits and every layer's key and value. Decode: one token
        and every layer's cached key and value -> logits and the grown cache. With `steps`
        > 1, that many decode steps in one program, each feeding its greedy token (argmax of
        its logits) and its grown cache to the next: every step's logits (concatenated along
        the sequence) and the cache after the last step."""
        import torch
        from transformers import DynamicCache

        class Decoder(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, input_ids: torch.Tensor, *past: torch.Tensor):
                cache = DynamicCache(config=self.model.config)
                for i in range(len(past) // 2):
                    cache.update(past[2 * i], past[2 * i + 1], i)
                logits = []
                for _ in range(steps):
                    out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True)
                    logits.append(out.logits)
                    input_ids = out.logits[:, -1:].argmax(-1)
                present = out.past_key_values
                kv = []
                for i in range(layers):
                    layer = present.layers[i]
                    kv += [layer.keys, layer.values]
                return (torch.cat(logits, dim=1) if steps > 1 else out.logits, *kv)
        return Decoder().eval()


def _encoder(kind: str, model_class: str, vocab: int, **fields: Any) -> Callable[[], Any]:
    def build() -> tuple[Any, dict[str, Any]]:
        import transformers
        _seed()
        config = _config(kind, **fields)
        model = getattr(transformers, model_class)(config)
        model.eval()
        return _Outputs.encoder(model), {"input_ids": _tokens(SEQ_LEN, vocab)}
    return build


def _decoder(kind: str, decode: bool, steps: int = 1, **fields: Any) -> Callable[[], Any]:
    def build() -> tuple[Any, dict[str, Any]]:
        import torch
        from transformers import AutoModelForCausalLM
        _seed()
        config = _config(kind, **fields)
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
        model.eval()
        layers = config.num_hidden_layers
        heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        vocab = min(config.vocab_size, 1000)
        if not decode:
            return _Outputs.decoder(model, layers, False), {"input_ids": _tokens(SEQ_LEN, vocab)}
        inputs = {"input_ids": _tokens(1, vocab)}
        for i in range(layers):
            inputs[f"past_key_{i}"] = torch.randn(1, heads, PAST_LEN, head_dim)
            inputs[f"past_value_{i}"] = torch.randn(1, heads, PAST_LEN, head_dim)
        return _Outputs.decoder(model, layers, True, steps), inputs
    return build


def _whisper_decoder(**fields: Any) -> Callable[[], Any]:
    """Whisper's decoder over a 128-token prompt, reading the encoder's states of 30 s of
    audio (1500 frames) through cross-attention: the program a transcription's prefill runs."""
    def build() -> tuple[Any, dict[str, Any]]:
        import torch
        import transformers
        _seed()
        decoder = transformers.WhisperModel(_config("WhisperConfig", **fields)).get_decoder()

        class Decoder(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = decoder

            def forward(self, input_ids: torch.Tensor,
                        encoder_hidden_states: torch.Tensor) -> torch.Tensor:
                return self.model(input_ids=input_ids,
                                  encoder_hidden_states=encoder_hidden_states).last_hidden_state
        return Decoder().eval(), {"input_ids": _tokens(SEQ_LEN),
                                  "encoder_hidden_states": torch.randn(1, 1500, fields["d_model"])}
    return build


def _detr(**fields: Any) -> Callable[[], Any]:
    """DETR (a ResNet-50 backbone built by timm, random weights) returning its class logits."""
    def build() -> tuple[Any, dict[str, Any]]:
        import torch
        import transformers
        _seed()
        model = transformers.DetrForObjectDetection(_config("DetrConfig", **fields))

        class Logits(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, image: torch.Tensor) -> torch.Tensor:
                return self.model(pixel_values=image).logits
        return Logits().eval(), _image()
    return build


def _speech(kind: str, model_class: str, keyword: str, shape: tuple[int, ...],
            encoder_only: bool = False, **fields: Any) -> Callable[[], Any]:
    def build() -> tuple[Any, dict[str, Any]]:
        import torch
        import transformers
        _seed()
        model = getattr(transformers, model_class)(_config(kind, **fields))
        if encoder_only:
            model = model.get_encoder()
        model.eval()
        return _Outputs.tensor_input(model, keyword), {keyword: torch.randn(*shape)}
    return build


IMAGE_WORDS = "float32 image [1,3,224,224]"
TOKENS_WORDS = f"int64 token ids [1,{SEQ_LEN}]"
LLAMA = dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=4, num_attention_heads=8,
             num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048)
QWEN = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=4, num_attention_heads=14,
            num_key_value_heads=2, vocab_size=151936, max_position_embeddings=4096,
            tie_word_embeddings=True)
GPT2 = dict(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, n_positions=1024)
MISTRAL = dict(hidden_size=512, intermediate_size=1792, num_hidden_layers=4, num_attention_heads=8,
               num_key_value_heads=2, vocab_size=32000, max_position_embeddings=4096)
# the published TinyLlama-1.1B and Qwen2-0.5B shapes, every layer: programs of ~800-900 ops
TINYLLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                 num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                 max_position_embeddings=2048)
QWEN2_05B = {**QWEN, "num_hidden_layers": 24, "max_position_embeddings": 32768,
             "rope_theta": 1000000.0}
DECODE_STEPS = 4  # steps of a multi-step decode program (TinyLlama: ~4 x 840 ops)
PHI3 = dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=4, num_attention_heads=8,
            num_key_value_heads=8, vocab_size=32064, max_position_embeddings=4096,
            pad_token_id=0)


def _fields(fields: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in fields.items())


def _models() -> list[ZooModel]:
    models: list[ZooModel] = []

    def vision(fn: str, family: str, **kwargs: Any) -> None:
        shape = kwargs.pop("shape", IMAGE)
        extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
        words = f"float32 image [{','.join(map(str, shape))}]"
        models.append(ZooModel(fn.split(".")[-1].replace("_", "-"), family,
                               f"torchvision.models.{fn}(weights=None{extra})",
                               _torchvision(fn, shape, **kwargs), words))

    for fn in ("resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2"):
        vision(fn, "cnn")
    for fn in ("mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "mnasnet1_0",
               "shufflenet_v2_x1_0", "squeezenet1_1", "efficientnet_b0", "efficientnet_v2_s",
               "regnet_x_400mf", "regnet_y_400mf", "regnet_y_1_6gf", "convnext_tiny",
               "densenet121"):
        vision(fn, "cnn")
    vision("googlenet", "cnn", aux_logits=False, init_weights=True)
    vision("inception_v3", "cnn", aux_logits=False, init_weights=True, shape=(1, 3, 299, 299))
    vision("vit_b_16", "vision-transformer")
    vision("swin_t", "vision-transformer")
    vision("maxvit_t", "vision-transformer")
    for fn in ("deit_tiny_patch16_224", "deit_small_patch16_224", "mobilevit_s",
               "levit_128s"):
        models.append(ZooModel(fn.replace("_", "-"), "vision-transformer",
                               f"timm.create_model({fn!r}, pretrained=False)", _timm(fn),
                               IMAGE_WORDS))
    for fn, key in (("lraspp_mobilenet_v3_large", "out"), ("deeplabv3_mobilenet_v3_large", "out"),
                    ("fcn_resnet50", "out")):
        models.append(ZooModel(
            fn.replace("_", "-"), "segmentation",
            f"torchvision.models.segmentation.{fn}(weights=None, weights_backbone=None)['{key}']",
            _first_output(fn, key), IMAGE_WORDS))

    # encoders: the architectures' published base sizes (the configs' defaults)
    for name, kind, cls, vocab, fields in (
            ("bert-base", "BertConfig", "BertModel", 30522, {}),
            ("distilbert-base", "DistilBertConfig", "DistilBertModel", 30522, {}),
            ("roberta-base", "RobertaConfig", "RobertaModel", 50265,
             dict(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                  pad_token_id=1)),
            ("albert-base", "AlbertConfig", "AlbertModel", 30000,
             dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072)),
            ("electra-small", "ElectraConfig", "ElectraModel", 30522, {})):
        models.append(ZooModel(name, "encoder",
                               f"transformers.{cls}(transformers.{kind}({_fields(fields)}))",
                               _encoder(kind, cls, vocab, **fields), TOKENS_WORDS))

    # decoders: GPT-2 at its published small size; Llama-, Qwen2-, Mistral- and Phi-3-style
    # models with their architectures' structure (GQA, RoPE, SwiGLU, RMSNorm) and 4 layers;
    # TinyLlama-1.1B and Qwen2-0.5B at their published sizes (issue 21's 10^3-op programs)
    for name, kind, fields in (("gpt2", "GPT2Config", GPT2), ("llama-small", "LlamaConfig", LLAMA),
                               ("qwen2-small", "Qwen2Config", QWEN),
                               ("mistral-small", "MistralConfig", MISTRAL),
                               ("phi3-small", "Phi3Config", PHI3),
                               ("tinyllama", "LlamaConfig", TINYLLAMA),
                               ("qwen2-0-5b", "Qwen2Config", QWEN2_05B)):
        call = (f"transformers.AutoModelForCausalLM.from_config(transformers.{kind}("
                f"{_fields(fields)}), attn_implementation='eager')")
        models.append(ZooModel(f"{name}-prefill", "decoder", call + ": prefill",
                               _decoder(kind, False, **fields), TOKENS_WORDS))
        models.append(ZooModel(
            f"{name}-decode", "decoder", call + ": one decode step with a key/value cache",
            _decoder(kind, True, **fields),
            f"int64 token id [1,1] and each layer's float32 key and value [1,kv_heads,{PAST_LEN},"
            "head_dim]"))
    # several decode steps chained into one program (issue 21's programs of a few 10^3 ops)
    for name, kind, fields in (("llama-small", "LlamaConfig", LLAMA),
                               ("tinyllama", "LlamaConfig", TINYLLAMA)):
        call = (f"transformers.AutoModelForCausalLM.from_config(transformers.{kind}("
                f"{_fields(fields)}), attn_implementation='eager')")
        models.append(ZooModel(
            f"{name}-decode-{DECODE_STEPS}steps", "decoder",
            call + f": {DECODE_STEPS} greedy decode steps chained, the key/value cache growing "
            f"from {PAST_LEN} to {PAST_LEN + DECODE_STEPS} tokens",
            _decoder(kind, True, DECODE_STEPS, **fields),
            f"int64 token id [1,1] and each layer's float32 key and value [1,kv_heads,{PAST_LEN},"
            f"head_dim]; {DECODE_STEPS} steps"))

    models.append(ZooModel(
        "wav2vec2-base", "speech", "transformers.Wav2Vec2Model(transformers.Wav2Vec2Config())",
        _speech("Wav2Vec2Config", "Wav2Vec2Model", "input_values", (1, 16000)),
        "float32 waveform [1,16000] (1 s at 16 kHz)"))
    whisper = dict(d_model=384, encoder_layers=4, encoder_attention_heads=6, decoder_layers=4,
                   decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
                   num_mel_bins=80)
    models.append(ZooModel(
        "whisper-tiny-encoder", "speech",
        f"transformers.WhisperModel(transformers.WhisperConfig({_fields(whisper)})).get_encoder()",
        _speech("WhisperConfig", "WhisperModel", "input_features", (1, 80, 3000),
                encoder_only=True, **whisper),
        "float32 log-mel features [1,80,3000] (30 s)"))

    # architectures added to check the importer and the solvers on shapes of program the
    # models above do not have (docs/zoo.md, "Unseen architectures"): 3-D convolutions,
    # pooling as token mixer, MLP token mixing, relative position buckets, cross-attention,
    # partial rotary embeddings with parallel attention and MLP, a detection transformer
    vision("video.r3d_18", "video", shape=(1, 3, 8, 112, 112))
    for fn in ("poolformer_s12", "resmlp_12_224"):
        models.append(ZooModel(fn.replace("_", "-"), "vision-transformer",
                               f"timm.create_model({fn!r}, pretrained=False)", _timm(fn),
                               IMAGE_WORDS))
    t5 = dict(d_model=512, d_ff=2048, d_kv=64, num_layers=6, num_heads=8, vocab_size=32128)
    models.append(ZooModel("t5-small-encoder", "encoder",
                           f"transformers.T5EncoderModel(transformers.T5Config({_fields(t5)}))",
                           _encoder("T5Config", "T5EncoderModel", 32128, **t5), TOKENS_WORDS))
    phi = dict(hidden_size=640, intermediate_size=2560, num_hidden_layers=4,  # head_dim 80 as phi-2
               num_attention_heads=8, partial_rotary_factor=0.4, vocab_size=51200,
               max_position_embeddings=2048)
    call = (f"transformers.AutoModelForCausalLM.from_config(transformers.PhiConfig("
            f"{_fields(phi)}), attn_implementation='eager')")
    models.append(ZooModel("phi-small-prefill", "decoder", call + ": prefill",
                           _decoder("PhiConfig", False, **phi), TOKENS_WORDS))
    models.append(ZooModel(
        "phi-small-decode", "decoder", call + ": one decode step with a key/value cache",
        _decoder("PhiConfig", True, **phi),
        f"int64 token id [1,1] and each layer's float32 key and value [1,heads,{PAST_LEN},"
        "head_dim]"))
    models.append(ZooModel(
        "whisper-tiny-decoder", "speech",
        f"transformers.WhisperModel(transformers.WhisperConfig({_fields(whisper)})).get_decoder()",
        _whisper_decoder(**whisper),
        f"int64 token ids [1,{SEQ_LEN}] and float32 encoder states [1,1500,384]"))
    detr = dict(use_timm_backbone=True, backbone="resnet50", use_pretrained_backbone=False,
                num_queries=100)
    models.append(ZooModel(
        "detr-resnet50", "detection",
        f"transformers.DetrForObjectDetection(transformers.DetrConfig({_fields(detr)})).logits",
        _detr(**detr), IMAGE_WORDS))
    return models


MODELS: dict[str, ZooModel] = {m.name: m for m in _models()}
