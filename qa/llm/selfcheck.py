"""Is the model engine sane on this machine? One short chat whose answer is known.

A llama.cpp build compiled for another instruction set than the CPU it runs on does not fail at
load: llama-cpp-python 0.3.36 built with native flags on an AVX-512 CPU with avx512_bf16 serves
``/v1/models`` and then dies with a segmentation fault (exit 139) on the first chat, and in process
it returns text that is not language. So the engine is checked the one way that tells: a fixed
question whose one-word answer every working chat model gives (`PROBE_QUESTION`, greedy), before
`kgqa llm serve` says it is up, after `kgqa llm prepare` assembles the model, and when `kgqa ask`
or `kgqa eval` find an LLM that does not answer. A wrong answer or a crash raises `EngineBroken`,
whose message names the engine, this machine's CPU flags and the fix.

``python -m qa.llm.selfcheck MODEL.gguf [THREADS]`` runs the check in process (llama-cpp-python)
and prints ``{"content": ...}``: `check_gguf` runs it so, in a child, so that a crash is reported
instead of taking kgqa down with it.
"""

from __future__ import annotations

import difflib
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from kg.errors import LLMError

if TYPE_CHECKING:
    from qa.config import LLMSettings

__all__ = [
    "PROBE_ANSWER",
    "PROBE_QUESTION",
    "EngineBroken",
    "EngineCheck",
    "answer_is_right",
    "check_chat",
    "check_gguf",
    "cpu_flags",
    "diagnose_server",
    "engine_broken",
    "exit_reason",
    "server_gone",
]

#: The check question, and the word its answer must contain (case and punctuation aside).
PROBE_QUESTION = "Which company makes the CUDA toolkit? Answer in one word."
PROBE_ANSWER = "NVIDIA"
PROBE_MAX_TOKENS = 8
_PORTABLE_CMAKE = "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
_CPU_FLAG = re.compile(r"^(avx|avx2|fma|f16c|avx_vnni|avx512\w*|amx\w*)$")


class EngineBroken(LLMError):
    """The model engine starts but is broken here: it answers the check question wrongly or dies
    on it (typically a llama.cpp build for another CPU)."""


class EngineCheck:
    """A passed check: what the engine answered and how long it took."""

    def __init__(self, content: str, seconds: float) -> None:
        self.content = content
        self.seconds = seconds

    def __str__(self) -> str:
        return (
            f"engine checked: {PROBE_QUESTION!r} -> {self.content.strip()!r} ({self.seconds:.1f} s)"
        )


def answer_is_right(text: str, expected: str = PROBE_ANSWER) -> bool:
    """Does ``text`` give ``expected``? Case, punctuation and Markdown aside, one typo allowed.

    >>> [answer_is_right(t) for t in ("NVIDIA", "**Nvidia** Corporation.", "nVidia", "NVDIA")]
    [True, True, True, True]
    >>> [answer_is_right(t) for t in ("", "Intel", "ationsationsations", "<|im_end|>!!!")]
    [False, False, False, False]
    """
    want = expected.casefold()
    words = re.findall(r"\w+", text.casefold())
    return any(w == want or difflib.SequenceMatcher(None, w, want).ratio() >= 0.8 for w in words)


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """The SIMD flags of this CPU that decide which llama.cpp builds run (from /proc/cpuinfo).

    >>> cpu_flags("flags\\t\\t: fpu sse2 avx avx2 fma f16c avx512f avx512_bf16 bmi2\\n")
    ['avx', 'avx2', 'avx512_bf16', 'avx512f', 'f16c', 'fma']
    >>> cpu_flags("processor : 0\\n")
    []
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return []
    found: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"flags", "Features"}:
            found.update(f for f in value.split() if _CPU_FLAG.match(f))
    return sorted(found)


def exit_reason(code: int) -> str:
    """A process exit code in words (128 + N, or -N from `subprocess`, is signal N).

    >>> exit_reason(139)
    'exit code 139 (SIGSEGV: a segmentation fault)'
    >>> exit_reason(-4), exit_reason(1)
    ('exit code 132 (SIGILL: an instruction this CPU does not have)', 'exit code 1')
    """
    signum = -code if code < 0 else code - 128 if code > 128 else 0
    if not signum:
        return f"exit code {code}"
    what = {
        signal.SIGSEGV: ": a segmentation fault",
        signal.SIGILL: ": an instruction this CPU does not have",
        signal.SIGBUS: ": a bus error",
        signal.SIGABRT: ": aborted",
    }
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"exit code {128 + signum} (signal {signum})"
    return f"exit code {128 + signum} ({name}{what.get(signal.Signals(signum), '')})"


def _llamacpp_build(python: str) -> str:
    """llama-cpp-python's version and the CPU features it was compiled with (asked in a child:
    the library may be the broken thing)."""
    code = (
        "import llama_cpp as l; print(l.__version__, '|', "
        "l.llama_print_system_info().decode(errors='replace').strip())"
    )
    try:
        done = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    if done.returncode != 0:
        return f"unknown ({exit_reason(done.returncode)} asking it)"
    version, _, features = done.stdout.strip().partition(" | ")
    on = [m.group(1) for m in re.finditer(r"(\w+) = 1", features)]
    return f"llama-cpp-python {version}, compiled for {' '.join(on) or features or '?'}"


def _fix(engine: str, wheels: Path) -> str:
    if engine == "llamacpp":
        return (
            "rebuild llama-cpp-python for the portable baseline (AVX2/FMA/F16C, no AVX-512; "
            f"scripts/llamacpp_wheel.sh): rm -rf {wheels} && bash scripts/setup.sh --tests\n"
            f'  or by hand: CMAKE_ARGS="{_PORTABLE_CMAKE}" pip install --force-reinstall '
            "--no-deps --no-cache-dir --no-binary llama-cpp-python "
            "'llama-cpp-python[server]==0.3.36'"
        )
    if engine == "vllm":
        return (
            "reinstall vLLM's environment for this machine (bash scripts/setup_vllm_env.sh), "
            "or serve with --engine llamacpp"
        )
    return "check the server's model and logs, or point kgqa at another server (--llm URL)"


def engine_broken(
    engine: str,
    what: str,
    *,
    python: str = sys.executable,
    cache_dir: Path | None = None,
    log: Path | None = None,
    tail: str = "",
) -> EngineBroken:
    """The `EngineBroken` error for ``engine`` (``llamacpp``, ``vllm``, a server kind) that did
    ``what`` on the check question: the engine, this CPU's flags, the build, the server's log
    (and its ``tail``), the fix."""
    flags = " ".join(cpu_flags()) or "none found"
    label = {"llamacpp": "llama.cpp", "vllm": "vLLM"}.get(engine, engine)
    lines = [
        f"the {label} engine is broken on this machine: {what}",
        f"  CPU flags (/proc/cpuinfo): {flags}",
    ]
    if engine == "llamacpp":
        lines.append(f"  engine: {_llamacpp_build(python)}")
        lines.append(
            "  a llama.cpp compiled for the build host's instruction set (-march=native) crashes "
            "(exit 139) or answers garbage on some CPUs (AVX-512 with avx512_bf16)"
        )
    if log is not None:
        lines.append(f"  server log: {log}" + (" ends:" if tail.strip() else ""))
    lines += [f"    {line}" for line in tail.strip().splitlines()]
    wheels = (cache_dir / "wheels") if cache_dir else Path("~/.cache/kgqa/wheels")
    lines.append(f"Fix: {_fix(engine, wheels)}")
    return EngineBroken("\n".join(lines))


def _wrong(content: str) -> str:
    return (
        f"it answered {content.strip()[:120]!r} to the check question {PROBE_QUESTION!r} "
        f"(expected {PROBE_ANSWER})"
    )


def check_chat(
    settings: LLMSettings,
    engine: str,
    *,
    python: str = sys.executable,
    cache_dir: Path | None = None,
    log: Path | None = None,
) -> EngineCheck:
    """Ask the server of ``settings`` the check question (greedy, a few tokens, no retries);
    `EngineBroken` when the answer is wrong. Errors reaching the server (`LLMError`) propagate:
    the caller knows whether a dead server means a crash. The keywords go to `engine_broken`."""
    from qa.llm.client import ChatModel

    probe = settings.model_copy(
        update={"temperature": 0.0, "max_retries": 0, "max_tokens": PROBE_MAX_TOKENS}
    )
    started = time.monotonic()
    with ChatModel(probe) as chat:
        result = chat.chat([{"role": "user", "content": PROBE_QUESTION}])
    if not answer_is_right(result.content):
        what = _wrong(result.content)
        raise engine_broken(engine, what, python=python, cache_dir=cache_dir, log=log)
    return EngineCheck(result.content, time.monotonic() - started)


def server_gone(base_url: str, patience_s: float = 30.0) -> bool:
    """Is the server at ``base_url`` gone? It refuses connections, or takes them and closes them
    without an answer (a process that is dying: its socket outlives it by a moment). Any HTTP
    answer means it is there. llama-cpp-python's server keeps GET /v1/models waiting while it
    generates: it is asked again until ``patience_s``, and still waiting then counts as there.

    >>> server_gone("http://127.0.0.1:9/v1")
    True
    """
    deadline = time.monotonic() + patience_s
    while True:
        try:
            httpx.get(f"{base_url.rstrip('/')}/models", timeout=httpx.Timeout(5.0, connect=3.0))
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError):
            return True
        except httpx.ReadError:  # reset: the listening socket closed under the request
            return True
        except httpx.TimeoutException:
            if time.monotonic() >= deadline:
                return False
            continue
        except httpx.HTTPError:
            return True
        return False


def diagnose_server(settings: LLMSettings) -> str | None:
    """Why the server of ``settings`` gave no usable answer, where that is the server's fault: it
    is gone (crashed or stopped), or it answers the check question wrongly (`EngineBroken`'s
    message); None when it is up and answers the check question right."""
    from qa.llm.client import ChatModel

    url = settings.base_url
    if server_gone(url):
        return (
            f"nothing answers at {url} any more: the LLM server stopped or crashed (a llama.cpp "
            "server built for another CPU dies with exit 139 on its first chat; `kgqa llm serve` "
            "checks its engine before it says it is up)"
        )
    try:
        with ChatModel(settings) as chat:
            kind = chat.server_kind().value
        check_chat(settings, kind)
    except EngineBroken as err:
        return str(err)
    except LLMError as err:
        return f"the LLM server at {url} does not answer the check question either: {err}"
    return None


def check_gguf(
    gguf: Path,
    *,
    python: str = sys.executable,
    threads: int = 2,
    cache_dir: Path | None = None,
    timeout_s: float = 600.0,
) -> EngineCheck:
    """Load ``gguf`` with llama-cpp-python in a child process and ask it the check question;
    `EngineBroken` when it answers wrongly or dies (a segfault is reported, not suffered)."""
    cmd = [python, "-m", "qa.llm.selfcheck", str(gguf), str(threads)]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LLMError(f"the engine check of {gguf} took over {timeout_s:.0f} s: {cmd}") from exc
    seconds = time.monotonic() - started
    if done.returncode != 0:
        tail = done.stderr.strip()[-600:]
        what = f"loading {gguf.name} and asking it the check question ended with "
        what += f"{exit_reason(done.returncode)}" + (f":\n{tail}" if tail else "")
        raise engine_broken("llamacpp", what, python=python, cache_dir=cache_dir)
    try:
        content = str(json.loads(done.stdout.strip().splitlines()[-1])["content"])
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise LLMError(f"the engine check printed no answer: {done.stdout[-300:]!r}") from exc
    if not answer_is_right(content):
        raise engine_broken("llamacpp", _wrong(content), python=python, cache_dir=cache_dir)
    return EngineCheck(content, seconds)


def _main(argv: list[str]) -> int:
    """In process: load the GGUF, ask the check question greedily, print the answer as JSON."""
    from llama_cpp import Llama

    threads = int(argv[1]) if len(argv) > 1 else 2
    llm = Llama(model_path=argv[0], n_ctx=512, n_threads=threads, verbose=False)
    reply = llm.create_chat_completion(
        messages=[{"role": "user", "content": PROBE_QUESTION}],
        max_tokens=PROBE_MAX_TOKENS,
        temperature=0.0,
    )
    content = reply["choices"][0]["message"]["content"] or ""
    print(json.dumps({"content": content}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
