"""``focus-eval serve --model M``: serve a local multimodal LLM preset over an OpenAI-compatible HTTP API, so that
``--model openai_chat --model-args base_url=http://HOST:PORT/v1,model=M`` (from any process) scores with it."""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="a multimodal LLM preset name or preset YAML file")
    p.add_argument("--model-args", "--model_args", default="", help="preset overrides k=v,... (e.g. source=DIR)")
    p.add_argument("--models-path", action="append", default=[], metavar="DIR",
                   help="a folder of user preset YAML files (repeatable; also $FOCUS_MODELS_PATH)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--max-batch", type=int, default=16,
                   help="most requests answered in one batched model call (default 16)")
    p.add_argument("--adapter", default=None, help="a LoRA adapter folder (from 'focus-eval sft') on the model")
    p.add_argument("--trust-remote-code", action="store_true", help="allow a preset's own model code to run")


def run(args: argparse.Namespace) -> int:
    import torch

    from focus_eval.adapters import load_adapter
    from focus_eval.adapters.openai_server import ChatServer
    from focus_eval.api import check_device
    from focus_eval.errors import FocusError
    from focus_eval.presets import load_preset, parse_model_args, resolve_model

    preset = load_preset(resolve_model(args.model, args.models_path), parse_model_args(args.model_args),
                         args.models_path)
    if preset.family != "mllm":
        raise FocusError(f"model {preset.name!r} is a {preset.family} model; serve answers chat requests with a "
                         f"multimodal LLM (family mllm)")
    check_device(args.device)  # a GPU asked for must be there, as for a run
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    kwargs = {"adapter_dir": args.adapter} if args.adapter else {}
    adapter = load_adapter(preset, device=device, trust_remote_code=args.trust_remote_code, **kwargs)
    try:
        server = ChatServer(adapter, preset.name, args.host, args.port, args.max_batch)
    except OSError as exc:
        raise FocusError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    # the first line names the address (with the port a --port 0 run was given), for scripts that start it
    print(f"focus-eval serve: {preset.name} at {server.url}", flush=True)
    print(f"  --model openai_chat --model-args base_url={server.url},model={preset.name}", file=sys.stderr,
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
