"""A stand-in OpenAI-compatible chat server, run as its own process, for the failures of a real
engine that a working model cannot be made to show: answering garbage (a llama.cpp built for
another CPU), or dying of a segmentation fault on a chat request.

    python standin_llm.py PORT ALIAS OWNED_BY MODE [CRASH_AT]

It speaks HTTP on 127.0.0.1:PORT (0: a free one) and prints ``port N`` once it listens.
GET /v1/models lists ALIAS, owned by OWNED_BY ("me" is llama-cpp-python's server). Chat requests
(plain or streamed) are answered by MODE: ``garbage`` answers everything with non-language;
``good`` answers the engine check question with NVIDIA and anything else with a JSON answer.
The CRASH_AT-th chat request (1 = the first) makes the process read address 0: it dies of a
segmentation fault before it answers, as a broken engine does, and its listening socket with it.
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GARBAGE = "ationsationsations<|im_start|>ationsations"
ANSWER = json.dumps(
    {"decline": False, "recommendations": [], "citations": ["E1"], "answer": "Use TensorRT."}
)


def main(argv: list[str]) -> None:
    port, alias, owned_by, mode = int(argv[0]), argv[1], argv[2], argv[3]
    crash_at = int(argv[4]) if len(argv) > 4 else 0
    chats = 0
    lock = threading.Lock()

    def content_for(payload: dict[str, Any]) -> str:
        if mode == "garbage":
            return GARBAGE
        last = str(payload.get("messages", [{}])[-1].get("content", ""))
        return "NVIDIA" if "CUDA toolkit" in last else ANSWER

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = {
                "object": "list",
                "data": [{"id": alias, "object": "model", "owned_by": owned_by}],
            }
            self._send(json.dumps(body).encode())

        def do_POST(self) -> None:
            nonlocal chats
            payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            with lock:
                chats += 1
                if chats == crash_at:  # a real segmentation fault: read address 0
                    ctypes.string_at(0)
            content = content_for(payload)
            if not payload.get("stream"):
                choice = {"index": 0, "message": {"role": "assistant", "content": content}}
                choice["finish_reason"] = "stop"
                self._send(json.dumps({"model": alias, "choices": [choice]}).encode())
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.close_connection = True
            for i in range(0, len(content), 5):
                delta = {"choices": [{"index": 0, "delta": {"content": content[i : i + 5]}}]}
                self.wfile.write(f"data: {json.dumps(delta)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
