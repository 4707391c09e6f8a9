"""A deterministic, realistic benchmark conversation: a long coding-agent session.

Mostly ASCII source code and shell output inside many tool results, with about 10% of the
characters Chinese (user requests, assistant notes, Chinese docs, logs and code comments).
Anthropic-style blocks by default (``tool_use`` / ``tool_result``); ``--style openai`` writes
``tool_calls`` and ``role: "tool"`` messages instead.

Speed: the text is not generated character by character. Three corpora (code, shell output,
Chinese prose) of a few MB are built once from templates with a seeded ``random.Random``; every
tool result is then a line-aligned slice of one of them, and each message is serialized by orjson
as it is made, so the size is known exactly and the array is joined without a second dump.

The file lands in ``bench/data/`` (gitignored) with a ``.meta.json`` sidecar, and is reused while
the sidecar matches (seed, size, style, generator version) and the file still has the size recorded.

    python bench/generate.py                      # 50 MB, seed 1, anthropic -> prints the path
    python bench/generate.py --size-mb 5 --style openai --force
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

VERSION = 1  # bump when the output for a given seed changes
DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_SIZE = 50 * 1024 * 1024
DEFAULT_SEED = 1
STYLES = ("anthropic", "openai")
CJK_SHARE = 0.10  # of all characters in the conversation's text

# --- corpora -------------------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


IDENTS = _words(
    "order user session cache client config request response handler parser token buffer "
    "result value index count limit offset page retry timeout worker queue payload record "
    "schema field item node path name status error logger metrics conn pool batch chunk"
)
TYPES = _words("int str bytes float bool dict list None Path Any")
MODULES = _words("os sys json time re typing pathlib logging asyncio itertools dataclasses")
COMMENTS_ZH = (
    "重试三次后放弃",
    "这里需要加锁",
    "超时时间单位为秒",
    "兼容旧版本的接口",
    "分页参数从零开始",
    "不要在循环里创建连接",
    "缓存失效后重新加载",
    "返回值可能为空",
)
CJK_WORDS = _words(
    "订单 接口 高峰期 超时 原因 修复 数据库 连接池 配置 文件 日志 服务 请求 响应 缓存 用户 "
    "会话 测试 失败 通过 错误 异常 重试 线程 进程 内存 性能 问题 分析 结果 建议 修改 代码 "
    "函数 参数 返回 调用 部署 环境 版本 依赖 更新 检查 确认 完成 继续 上下文 压缩 模型 "
    "工具 输出 输入 目录 路径 权限 网络 延迟 吞吐 监控 告警 指标 查询 索引 事务 锁 队列"
)
CJK_PUNCT = ("，", "。", "、", "：", "；", "（", "）", "！", "？")


def _ident(rng: random.Random) -> str:
    return "_".join(rng.sample(IDENTS, rng.randint(1, 3)))


def _code_line(rng: random.Random, depth: int) -> str:
    indent = "    " * depth
    a, b, c = _ident(rng), _ident(rng), _ident(rng)
    kind = rng.random()
    if kind < 0.08:
        return f"{indent}def {a}({b}: {rng.choice(TYPES)}, {c}={rng.randint(0, 99)}):"
    if kind < 0.14:
        return f"{indent}for {a} in {b}.{c}():"
    if kind < 0.20:
        return f"{indent}if {a} is not None and len({b}) > {rng.randint(1, 500)}:"
    if kind < 0.26:
        return f"{indent}return {{'{a}': {b}, '{c}': {rng.random():.4f}}}"
    if kind < 0.30:
        return f"{indent}# {rng.choice(COMMENTS_ZH)}"
    if kind < 0.36:
        return f"{indent}# TODO({a}): handle {b} when {c} is empty"
    if kind < 0.42:
        return f'{indent}raise ValueError(f"{a}: bad {b} {{{c}!r}}")'
    if kind < 0.46:
        return f'{indent}logger.info("%s -> %d", {a}, len({b}))'
    if kind < 0.50:
        return ""
    return f"{indent}{a} = {b}.{c}({rng.choice(IDENTS)}, timeout={rng.randint(1, 60)})"


def _code_corpus(rng: random.Random, lines: int) -> str:
    out: list[str] = []
    depth = 0
    while len(out) < lines:
        if rng.random() < 0.05:
            out.append(f"import {rng.choice(MODULES)}")
            depth = 0
            continue
        line = _code_line(rng, depth)
        out.append(line)
        if line.endswith(":"):
            depth = min(depth + 1, 4)
        elif rng.random() < 0.2:
            depth = max(depth - 1, 0)
    return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(out, start=1)) + "\n"


def _shell_line(rng: random.Random) -> str:
    kind = rng.random()
    a, b = rng.choice(IDENTS), rng.choice(IDENTS)
    if kind < 0.25:
        return (
            f"2026-11-30T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
            f"{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}Z worker-{rng.randint(0, 7)} "
            f"{rng.choice(('GET', 'POST', 'PUT'))} /api/{a}s/{rng.randint(1, 99999)}?page="
            f"{rng.randint(0, 50)} {rng.choice((200, 200, 200, 201, 404, 500, 504))} "
            f"{rng.randint(1, 3000)}ms"
        )
    if kind < 0.40:
        return (
            f"-rw-r--r--  1 dev  staff  {rng.randint(0, 999999):>7d} Nov {rng.randint(1, 30):2d} "
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} src/{a}/{b}.py"
        )
    if kind < 0.55:
        outcome = rng.choice(("PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED"))
        return f"tests/test_{a}.py::test_{b}_{rng.randint(0, 99)} {outcome}"
    if kind < 0.65:
        return f"src/{a}/{b}.py:{rng.randint(1, 900)}:{rng.randint(1, 80)}: E501 line too long"
    if kind < 0.75:
        sign = rng.choice("+- ")
        return f"{sign}    {_ident(rng)} = {_ident(rng)}({rng.randint(0, 9)})"
    if kind < 0.80:
        return (
            f"错误：{rng.choice(CJK_WORDS)}{rng.choice(CJK_WORDS)}失败 ({a}={rng.randint(0, 99)})"
        )
    if kind < 0.90:
        return f"{a}.{b}: {rng.random() * 1000:.3f} ms/op  {rng.randint(1000, 99999)} ops"
    return (
        f'Traceback (most recent call last):\n  File "src/{a}.py", line {rng.randint(1, 500)}'
        f", in {b}\n    {_ident(rng)}()\nTimeoutError: {a} gave up after {rng.randint(1, 5)} tries"
    )


def _shell_corpus(rng: random.Random, lines: int) -> str:
    return "\n".join(_shell_line(rng) for _ in range(lines)) + "\n"


def _zh_sentence(rng: random.Random) -> str:
    words = [rng.choice(CJK_WORDS) for _ in range(rng.randint(4, 12))]
    if rng.random() < 0.3:  # Chinese prose about code names files and flags in ASCII
        words.insert(rng.randrange(len(words)), f" `{_ident(rng)}.py` ")
    for _ in range(len(words) // 4):
        words.insert(rng.randrange(1, len(words)), rng.choice(CJK_PUNCT[:3]))
    return "".join(words) + rng.choice(("。", "。", "！", "？"))


def _zh_corpus(rng: random.Random, lines: int) -> str:
    out = []
    for _ in range(lines):
        if rng.random() < 0.1:
            out.append(f"## {rng.choice(CJK_WORDS)}{rng.choice(CJK_WORDS)}")
        else:
            out.append("".join(_zh_sentence(rng) for _ in range(rng.randint(1, 4))))
    return "\n".join(out) + "\n"


def _chinese(text: str) -> int:
    """Characters of Chinese text: every non-ASCII character the corpora hold is 3 UTF-8 bytes."""
    return 0 if text.isascii() else (len(text.encode()) - len(text)) // 2


# --- the conversation ----------------------------------------------------------------------------


@dataclass
class _Corpora:
    code: str
    shell: str
    zh: str


class _Builder:
    """Appends messages, serialized at once, until the byte budget is spent."""

    def __init__(self, rng: random.Random, size: int, style: str, corpora: _Corpora) -> None:
        self.rng = rng
        self.size = size
        self.style = style
        self.corpora = corpora
        self.parts: list[bytes] = []
        self.bytes = 2  # the brackets
        self.chars = 0  # characters of text content, for the CJK share
        self.cjk = 0
        self.calls = 0
        self.results = 0
        self.max_result = max(size // 16, 200)

    def full(self) -> bool:
        return self.bytes >= self.size

    def add(self, message: dict[str, Any]) -> None:
        data = orjson.dumps(message)
        self.parts.append(data)
        self.bytes += len(data) + 1

    def count(self, text: str) -> str:
        self.chars += len(text)
        self.cjk += _chinese(text)
        return text

    def want_cjk(self) -> bool:
        return self.cjk < CJK_SHARE * self.chars

    def slice(self, corpus: str, mean: int) -> str:
        length = min(int(self.rng.expovariate(1 / mean)) + 80, self.max_result, len(corpus) // 2)
        start = self.rng.randrange(len(corpus) - length)
        start = corpus.find("\n", start) + 1
        end = corpus.find("\n", start + length)
        return corpus[start : end + 1 if end >= 0 else len(corpus)]

    def zh(self, sentences: int) -> str:
        return self.count("".join(_zh_sentence(self.rng) for _ in range(sentences)))

    def note(self) -> str:
        rng = self.rng
        if self.want_cjk():
            return self.zh(rng.randint(1, 3))
        return self.count(
            f"Let me look at `{_ident(rng)}` in src/{rng.choice(IDENTS)}.py; the "
            f"{rng.choice(IDENTS)} {rng.choice(IDENTS)} may be the cause."
        )

    # tool calls and their results ---------------------------------------------------------------

    def call(self) -> tuple[str, str, dict[str, Any], Any]:
        """One tool call: (id, name, input, result content)."""
        rng, c = self.rng, self.corpora
        self.calls += 1
        call_id = f"toolu_{self.calls:06d}{rng.getrandbits(32):08x}"
        module = f"src/{rng.choice(IDENTS)}/{rng.choice(IDENTS)}.py"
        if self.want_cjk() and rng.random() < 0.7:
            doc = f"docs/{rng.choice(IDENTS)}.zh.md"
            name, args, text = "read_file", {"path": doc}, self.slice(c.zh, 3000)
        else:
            kind = rng.random()
            if kind < 0.35:
                name = "bash"
                args = {"command": f"pytest -x tests/test_{rng.choice(IDENTS)}.py 2>&1 | tail"}
                text = self.slice(c.shell, 6000)
            elif kind < 0.65:
                name, args, text = "read_file", {"path": module}, self.slice(c.code, 12000)
            elif kind < 0.80:
                name = "grep"
                args = {"pattern": rng.choice(IDENTS), "path": "src/", "-n": True}
                text = self.slice(c.shell, 2000)
            elif kind < 0.90:
                body = self.slice(c.code, 3000)
                name, args, text = "write_file", {"path": module, "content": body}, "ok"
                self.count(body)
            else:
                name = "edit_file"
                args = {"path": module, "old": _ident(rng), "new": _ident(rng)}
                text = f"Edited {module}: 1 replacement"
        self.count(text)
        content: Any = text
        if rng.random() < 0.1:  # some results are lists of text blocks
            content = [{"type": "text", "text": text}]
        return call_id, name, args, content

    def tool_turn(self) -> None:
        rng = self.rng
        calls = [self.call() for _ in range(rng.choice((1, 1, 1, 2, 3)))]
        self.results += len(calls)
        error = rng.random() < 0.05
        if self.style == "openai":
            self.add(
                {
                    "role": "assistant",
                    "content": self.note() if rng.random() < 0.6 else None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": orjson.dumps(args).decode()},
                        }
                        for call_id, name, args, _ in calls
                    ],
                }
            )
            for call_id, name, _, content in calls:
                self.add(
                    {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}
                )
            return
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.6:
            blocks.append({"type": "text", "text": self.note()})
        blocks += [
            {"type": "tool_use", "id": call_id, "name": name, "input": args}
            for call_id, name, args, _ in calls
        ]
        self.add({"role": "assistant", "content": blocks})
        results = []
        for call_id, _, _, content in calls:
            block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
            if error:
                block["is_error"] = True
            results.append(block)
        self.add({"role": "user", "content": results})

    def chat_turn(self) -> None:
        rng = self.rng
        ask = self.zh(rng.randint(1, 4)) if self.want_cjk() else self.note()
        self.add({"role": "user", "content": ask})
        self.add({"role": "assistant", "content": [{"type": "text", "text": self.note()}]})

    def build(self) -> bytes:
        self.add({"role": "system", "content": "You are a careful coding agent. Work in /srv/app."})
        self.add({"role": "user", "content": self.zh(3) + " Keep the public API unchanged."})
        while not self.full():
            if self.rng.random() < 0.1:
                self.chat_turn()
            else:
                self.tool_turn()
        return b"[" + b",".join(self.parts) + b"]\n"


def build(size: int = DEFAULT_SIZE, seed: int = DEFAULT_SEED, style: str = "anthropic") -> bytes:
    """The conversation as JSON bytes, at least ``size`` bytes (one message more at most)."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
    rng = random.Random(f"ctxpack-bench-{seed}")
    scale = max(min(size // (50 * 1024), 1000), 2)  # corpus lines per 50 KB, up to 50 MB
    corpora = _Corpora(
        code=_code_corpus(rng, 40 * scale),
        shell=_shell_corpus(rng, 40 * scale),
        zh=_zh_corpus(rng, 10 * scale),
    )
    return _Builder(rng, size, style, corpora).build()


def stats(data: bytes) -> dict[str, Any]:
    """Size, message count and the CJK share of the text, for the record."""
    text = data.decode()
    messages = orjson.loads(data)
    return {
        "bytes": len(data),
        "messages": len(messages),
        "cjk_share": round(sum(1 for ch in text if "\u3000" <= ch <= "\u9fff") / len(text), 4),
    }


# --- cached on disk ------------------------------------------------------------------------------


def ensure(
    size: int = DEFAULT_SIZE,
    seed: int = DEFAULT_SEED,
    style: str = "anthropic",
    force: bool = False,
    log: Callable[[str], None] | None = None,
) -> Path:
    """The path of the conversation file, generated now unless a matching one is present."""
    stem = f"conversation-{style}-seed{seed}-{size}"
    path = DATA_DIR / f"{stem}.json"
    meta_path = DATA_DIR / f"{stem}.meta.json"
    meta = {"version": VERSION, "seed": seed, "size": size, "style": style}
    if not force and path.exists() and meta_path.exists():
        try:
            recorded = orjson.loads(meta_path.read_bytes())
        except orjson.JSONDecodeError:
            recorded = {}
        if recorded.get("params") == meta and recorded.get("bytes") == path.stat().st_size:
            return path
    started = time.perf_counter()
    data = build(size, seed, style)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    _write(path, data)  # data first, then the sidecar that vouches for it
    _write(meta_path, orjson.dumps({"params": meta, "bytes": len(data)}))
    if log:
        elapsed = time.perf_counter() - started
        log(f"generated {path.name}: {len(data) / 1e6:.1f} MB in {elapsed:.1f} s")
    return path


def _write(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=DEFAULT_SIZE / 2**20)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--style", choices=STYLES, default="anthropic")
    parser.add_argument("--force", action="store_true", help="Regenerate even if present.")
    parser.add_argument("--stats", action="store_true", help="Print size, messages, CJK share.")
    args = parser.parse_args(argv)
    size = int(args.size_mb * 2**20)
    path = ensure(size, args.seed, args.style, args.force, log=lambda m: print(m, file=sys.stderr))
    print(path)
    if args.stats:
        print(orjson.dumps(stats(path.read_bytes())).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
