"""Regenerate session.json: a small, realistic coding-agent session (Anthropic blocks).

The bundled example every README recipe and `make run` uses; also a test input.
Run: python examples/make_session.py > examples/session.json
"""

import json

LOG = "\n".join(
    f"2026-11-30T10:{m:02d}:00Z worker-{m % 4} GET /api/orders?page={m} 200 {40 + m}ms"
    for m in range(60)
)
CONFIG = """[server]
host = "0.0.0.0"
port = 8080
# 超时（秒）
timeout = 30

[database]
url = "postgres://app@db/orders"
pool_size = 5
"""
SOURCE = "\n".join(
    f"{n}: " + line
    for n, line in enumerate(
        [
            "import time",
            "from .db import connect",
            "",
            "def fetch_orders(page, size=50):",
            "    conn = connect()",
            "    rows = conn.execute('SELECT * FROM orders LIMIT ? OFFSET ?', (size, page * size))",
            "    return [dict(r) for r in rows]",
            "",
            "def retry(fn, attempts=3):",
            "    for i in range(attempts):",
            "        try:",
            "            return fn()",
            "        except TimeoutError:",
            "            time.sleep(2 ** i)",
            "    raise TimeoutError('gave up')",
        ]
        * 4,
        start=1,
    )
)
TEST_OUTPUT = (
    "============================= test session starts ==============================\n"
    + "".join(f"tests/test_orders.py::test_page_{i} PASSED\n" for i in range(30))
    + "tests/test_orders.py::test_timeout FAILED\n"
    + "E   TimeoutError: gave up after 3 attempts (pool_size=5)\n"
    + "========================= 1 failed, 30 passed in 4.21s =========================\n"
)


def call(call_id, name, **arguments):
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def result(call_id, content, is_error=False):
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def session():
    return [
        {"role": "system", "content": "You are a careful coding agent. Work in /srv/orders."},
        {
            "role": "user",
            "content": "订单接口在高峰期经常超时，请找出原因并修复。Keep the public API unchanged.",
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll start with the service log and the config."},
                call("toolu_01", "bash", command="tail -n 60 /srv/orders/logs/api.log"),
            ],
        },
        {"role": "user", "content": [result("toolu_01", LOG)]},
        {
            "role": "assistant",
            "content": [call("toolu_02", "read_file", file_path="/srv/orders/config.toml")],
        },
        {"role": "user", "content": [result("toolu_02", CONFIG)]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "pool_size = 5 looks small. Let me read the data layer."},
                call("toolu_03", "read_file", file_path="/srv/orders/orders/api.py"),
            ],
        },
        {"role": "user", "content": [result("toolu_03", SOURCE)]},
        {
            "role": "assistant",
            "content": [call("toolu_04", "bash", command="cd /srv/orders && pytest -q tests")],
        },
        {"role": "user", "content": [result("toolu_04", TEST_OUTPUT, is_error=True)]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "The connection is never returned to the pool. Fixing fetch_orders.",
                },
                call(
                    "toolu_05",
                    "edit_file",
                    file_path="/srv/orders/orders/api.py",
                    old="    conn = connect()",
                    new="    with connect() as conn:",
                ),
            ],
        },
        {
            "role": "user",
            "content": [result("toolu_05", "Edited /srv/orders/orders/api.py (1 change)")],
        },
        {"role": "user", "content": "另外把 pool_size 调到 20，但不要改端口。"},
        {
            "role": "assistant",
            "content": [
                call(
                    "toolu_06",
                    "edit_file",
                    file_path="/srv/orders/config.toml",
                    old="pool_size = 5",
                    new="pool_size = 20",
                ),
                call("toolu_07", "bash", command="cd /srv/orders && pytest -q tests"),
            ],
        },
        {
            "role": "user",
            "content": [
                result("toolu_06", "Edited /srv/orders/config.toml (1 change)"),
                result(
                    "toolu_07", TEST_OUTPUT.replace("FAILED", "PASSED").replace("1 failed, ", "")
                ),
            ],
        },
        {
            "role": "assistant",
            "content": "All 31 tests pass. Next: add a regression test for the pool leak.",
        },
        {"role": "user", "content": "好的，请加上回归测试，然后提交。"},
    ]


if __name__ == "__main__":
    print(json.dumps(session(), ensure_ascii=False, indent=1))
