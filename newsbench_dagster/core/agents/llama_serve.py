"""llama.cpp's own OpenAI-compatible server, prebuilt in the xllamacpp wheel, serving one GGUF
on loopback until SIGTERM: what `LocalModelServer` starts, in a process of its own so that a
server left generating for nobody can be killed and restarted.

    python -m newsbench_dagster.core.agents.llama_serve --model F.gguf --alias NAME --port P
        [--ctx TOKENS] [--threads N] [--chat-template FILE.jinja]

Without --chat-template the model's own template (from its GGUF) is used. llama.cpp renders it
with Jinja (no HTML escaping) and honours a request's `max_tokens` for everything it generates,
tool calls included, saying `finish_reason: "length"` when it cut.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="llama_serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--alias", required=True, help="the model's name on the endpoint")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx", type=int, default=8192, help="context window in tokens")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--chat-template", help="a Jinja chat template file")
    args = parser.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.n_ctx = args.ctx
    params.n_parallel = 1  # one slot: the harness sends one request at a time
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as f:
            params.chat_template = f.read()
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    # The server's threads inherit this mask: SIGTERM/SIGINT reach only sigwait below.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        server = xllamacpp.Server(params)  # loads the model, then serves in its own threads
    except RuntimeError as e:  # llama.cpp logged why just above
        sys.exit(f"llama.cpp could not serve {args.model}: {e}")
    print(f"serving {args.alias} at {server.listening_address}", file=sys.stderr, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    # Nothing to save: a generation in progress is dropped, as a killed server would drop it.
    os._exit(0)


if __name__ == "__main__":
    main()
