"""What a snippet needs that this machine cannot give, and `...` illustrations, read from the tree:
each rule, and the code that looks alike but needs nothing (which must still run)."""

from __future__ import annotations

import ast

import pytest

from qa.snippets.requires import machine_needs, placeholders
from qa.snippets.static import import_bindings


def _needs(code: str) -> list[str]:
    tree = ast.parse(code)
    return [
        f"{n.kind}: {n.text()}"
        for n in machine_needs(tree, import_bindings(tree), accelerator=False)
    ]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "import torch\nx = torch.ones(2).cuda()",
            ["accelerator: `.cuda()` on torch.ones(2) (line 2)"],
        ),
        (
            "import torch\ntorch.cuda.synchronize()",
            ["accelerator: torch.cuda.synchronize() (line 2)"],
        ),
        (
            "import torch\nassert torch.cuda.is_available()",
            ["accelerator: `assert torch.cuda.is_available()` (line 2)"],
        ),
        ("import torch\nd = torch.device('mps')", ["accelerator: device 'mps' (line 2)"]),
        (
            "from lightning import Trainer\nTrainer(accelerator='gpu', devices=8)",
            ["accelerator: accelerator='gpu' (line 2)"],
        ),
        ("model.to_empty(device='cuda:0')", ["accelerator: device 'cuda:0' (line 1)"]),
        (
            "import torch\nllm = torch.load('llama.gguf')",
            ["model: model file 'llama.gguf' (torch.load) (line 2)"],
        ),
        (
            "import ctranslate2\ng = ctranslate2.Generator('ende_ct2/')",
            ["model: local model 'ende_ct2/' (ctranslate2.Generator) (line 2)"],
        ),
        ("import os\nkey = os.environ['OPENAI_API_KEY']", ["credentials: OPENAI_API_KEY (line 2)"]),
        (
            "from huggingface_hub import login\nlogin()",
            ["credentials: huggingface_hub.login() (line 2)"],
        ),
        (
            "from openai import OpenAI\n"
            "c = OpenAI(base_url='http://localhost:8000/v1', api_key='EMPTY')",
            [
                "service: an OpenAI-compatible API server (openai.OpenAI) (line 2)",
                "service: 'http://localhost:8000/v1' (line 2)",
            ],
        ),
    ],
)
def test_what_the_machine_lacks(code: str, expected: list[str]) -> None:
    assert _needs(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        "import torch\nd = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "x = torch.ones(2, device=d)",
        "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()",
        "import torch\nif use_gpu:\n    model.cuda()",
        "import torch\ntorch.cuda.manual_seed_all(0)\nprint(torch.cuda.device_count())",
        "import torch\nprint('runs on cuda')\nif device == 'cuda':\n    pass",
        "import torch\nassert t.device == torch.device('meta')",
        "import os\nos.environ['TOKENIZERS_PARALLELISM'] = 'false'",
        "import torch\ntorch.save(m, 'm.pt')\nm = torch.load('m.pt')",
        "import tempfile\nf = tempfile.NamedTemporaryFile(suffix='.onnx')",
        "print('open http://localhost:7860 in a browser')",
    ],
)
def test_code_that_handles_the_machine_needs_nothing(code: str) -> None:
    assert _needs(code) == []


def test_placeholders_are_where_code_was_left_out_not_python_idioms() -> None:
    code = (
        "from pydantic import BaseModel, Field\nfrom typing import Protocol, overload\n"
        "import numpy as np\n"
        "class Cfg(BaseModel):\n    name: str = Field(...)\n"  # pydantic's required field
        "class Reader(Protocol):\n    def read(self) -> bytes: ...\n"  # a protocol's stub
        "class Error(Exception): ...\n"  # an empty class
        "x = np.zeros((2, 2))[..., 0]\n"  # a slice
        "cfg = make_config(..., r=8)\n"  # arguments left out
        "def train():\n    ...\n"  # a body left out
        "items = [1, 2, ...]\n"  # items left out
    )
    tree = ast.parse(code)
    assert placeholders(tree, import_bindings(tree)) == [
        "make_config(..., r=8) (line 10)",
        "`...` as the body of train() (line 12)",
        "`[1, 2, ...]` (line 13)",
    ]
