"""``focus-eval serve --model M``: serve a local multimodal LLM preset over an OpenAI-compatible HTTP API, so that
``--model openai_chat --model-args base_url=http://HOST:PORT/v1,model=M`` (from any process) scores with it.
What a client may send and who may reach the server: docs/SECURITY.md (the server)."""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    from focus_eval.adapters.serve_limits import ServeLimits

    d = ServeLimits()
    p.add_argument("--model", required=True, help="a multimodal LLM preset name or preset YAML file")
    p.add_argument("--model-args", "--model_args", default="", help="preset overrides k=v,... (e.g. source=DIR)")
    p.add_argument("--models-path", action="append", default=[], metavar="DIR",
                   help="a folder of user preset YAML files (repeatable; also $FOCUS_MODELS_PATH)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine "
                                                       "only; any other needs --api-key-env)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--max-batch", type=int, default=16,
                   help="most requests answered in one batched model call (default 16)")
    p.add_argument("--adapter", default=None, help="a LoRA adapter folder (from 'focus-eval sft') on the model")
    p.add_argument("--trust-remote-code", action="store_true", help="allow a preset's own model code to run")
    g = p.add_argument_group("access and limits (docs/SECURITY.md)")
    g.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="require 'Authorization: Bearer TOKEN', the token read from environment variable NAME")
    g.add_argument("--allowed-host", action="append", default=[], metavar="NAME[:PORT]",
                   help="a Host header value to answer besides the bound host, localhost, 127.0.0.1 and [::1] "
                        "(repeatable; without a port, the server's)")
    g.add_argument("--allowed-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web page origin (scheme://host:port) allowed to call the API, with CORS headers "
                        "(repeatable; default none: browser pages are refused)")
    g.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes, help="largest request body (default "
                                                                                "20 MiB)")
    g.add_argument("--max-pixels", type=int, default=d.max_pixels,
                   help=f"most pixels (width x height) of a request's image (default {d.max_pixels})")
    g.add_argument("--max-tokens-cap", type=int, default=d.max_tokens_cap,
                   help=f"the largest max_tokens a request may ask for (default {d.max_tokens_cap})")
    g.add_argument("--max-top-logprobs", type=int, default=d.max_top_logprobs,
                   help=f"the largest top_logprobs a request may ask for (default {d.max_top_logprobs}; the "
                        f"vocabulary's size lets a client score every token exactly)")
    g.add_argument("--max-queue", type=int, default=d.max_queue,
                   help=f"requests waiting for the model (each holding its decoded image) before more are refused "
                        f"with 503 and Retry-After (default {d.max_queue})")
    g.add_argument("--max-prompt-chars", type=int, default=d.max_prompt_chars,
                   help=f"longest text of a request (default {d.max_prompt_chars} characters)")
    g.add_argument("--read-timeout", type=float, default=d.read_timeout_s, metavar="SECONDS",
                   help=f"time to send the request head, and then the body (default {d.read_timeout_s:g})")
    g.add_argument("--request-timeout", type=float, default=d.request_timeout_s, metavar="SECONDS",
                   help=f"time from the body to the answer, waiting included (default {d.request_timeout_s:g})")


def _limits(args: argparse.Namespace):
    from focus_eval.adapters.serve_limits import ServeLimits
    from focus_eval.errors import FocusError

    try:
        return ServeLimits(max_body_bytes=args.max_body_bytes, max_pixels=args.max_pixels,
                           max_tokens_cap=args.max_tokens_cap, max_top_logprobs=args.max_top_logprobs,
                           max_queue=args.max_queue,
                           max_prompt_chars=args.max_prompt_chars, read_timeout_s=args.read_timeout,
                           request_timeout_s=args.request_timeout)
    except ValueError as exc:
        raise FocusError(f"serve: {exc}") from None


def _access(args: argparse.Namespace) -> bytes | None:
    """The bearer token (None without --api-key-env); a host beyond this machine needs one and is warned of."""
    from focus_eval.adapters.serve_guard import exposure_warning, read_api_key
    from focus_eval.errors import FocusError

    warning = exposure_warning(args.host)
    if warning and not args.api_key_env:
        raise FocusError(f"--host {args.host} listens beyond this machine, where anyone who reaches it could run "
                         f"the model; give --api-key-env NAME (a bearer token in environment variable NAME), "
                         f"or listen on 127.0.0.1")
    key = read_api_key(args.api_key_env) if args.api_key_env else None
    if warning:
        print(warning, file=sys.stderr, flush=True)
    return key


def run(args: argparse.Namespace) -> int:
    import logging

    import torch
    from PIL import Image

    from focus_eval.adapters import load_adapter
    from focus_eval.adapters.openai_server import ChatServer
    from focus_eval.api import check_device
    from focus_eval.errors import FocusError
    from focus_eval.presets import load_preset, parse_model_args, resolve_model

    limits, key = _limits(args), _access(args)  # refused before the model loads
    preset = load_preset(resolve_model(args.model, args.models_path), parse_model_args(args.model_args),
                         args.models_path)
    if preset.family != "mllm":
        raise FocusError(f"model {preset.name!r} is a {preset.family} model; serve answers chat requests with a "
                         f"multimodal LLM (family mllm)")
    check_device(args.device)  # a GPU asked for must be there, as for a run
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    kwargs = {"adapter_dir": args.adapter} if args.adapter else {}
    adapter = load_adapter(preset, device=device, trust_remote_code=args.trust_remote_code, **kwargs)
    Image.MAX_IMAGE_PIXELS = limits.max_pixels  # this process decodes no larger image anywhere
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="focus-eval serve: %(levelname)s: "
                                                                          "%(message)s")
    try:
        server = ChatServer(adapter, preset.name, args.host, args.port, args.max_batch, limits,
                            args.allowed_host, args.allowed_origin, key)
    except OSError as exc:
        raise FocusError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    # the first line names the address (with the port a --port 0 run was given), for scripts that start it
    print(f"focus-eval serve: {preset.name} at {server.url}", flush=True)
    token = f",api_key_env={args.api_key_env}" if args.api_key_env else ""
    print(f"  --model openai_chat --model-args base_url={server.url},model={preset.name}{token}", file=sys.stderr,
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
