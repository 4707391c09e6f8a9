"""The exact strings full compaction sends and writes (SPEC §3.5, §3.7).

``zh`` is the reference's wording, byte for byte; ``en`` says the same in English.
"""

from __future__ import annotations

from dataclasses import dataclass

SUMMARY_PREFIX = "[Context Compressed]\n"


@dataclass(frozen=True)
class Prompts:
    system: str
    user_intro: str  # followed by a blank line and the serialized history
    acknowledgement: str
    instructions_label: str  # introduces the user's own focus, appended to the system prompt


PROMPTS: dict[str, Prompts] = {
    "zh": Prompts(
        system=(
            "你是 BareAgent 的上下文压缩助手。请用中文总结对话中的目标、已完成工作、关键约束、"
            "重要文件路径、工具执行结果要点，以及接下来继续工作所需的上下文。输出简洁但不能遗漏事实。"
        ),
        user_intro="请简洁总结以下对话的关键信息和已完成的工作，供后续继续工作使用：",
        acknowledgement="收到，我已理解之前的上下文，继续工作。",
        instructions_label="额外要求：",
    ),
    "en": Prompts(
        system=(
            "You are BareAgent's context compaction assistant. Summarize in English the "
            "conversation's goals, the work completed, key constraints, important file paths, the "
            "key points of tool results, and the context needed to continue the work. Be concise, "
            "but do not leave out any facts."
        ),
        user_intro=(
            "Concisely summarize the key information and the work completed in the following "
            "conversation, for use in continuing the work:"
        ),
        acknowledgement="Got it. I understand the previous context and will continue working.",
        instructions_label="Additional focus: ",
    ),
}


def system_prompt(lang: str, instructions: str | None = None) -> str:
    prompts = PROMPTS[lang]
    if not instructions:
        return prompts.system
    return f"{prompts.system}\n\n{prompts.instructions_label}{instructions}"


def user_prompt(lang: str, serialized_history: str) -> str:
    return f"{PROMPTS[lang].user_intro}\n\n{serialized_history}"
