"""The extractive summary's words, in both languages: its six headings (the parts the prompt
asks for, SPEC §7) and the labels of its lines."""

from __future__ import annotations

SECTIONS = {
    "zh": ("目标", "已完成工作", "关键约束", "重要文件路径", "工具执行结果要点", "后续所需上下文"),
    "en": (
        "Goal",
        "Work done",
        "Key constraints",
        "Important file paths",
        "Key tool results",
        "Needed to continue",
    ),
}
GOAL, WORK, CONSTRAINTS, PATHS, RESULTS, NEXT = range(6)
LABELS = {
    "zh": {
        "first": "最初请求",
        "later": "后续请求",
        "last": "最新请求",
        "same": "即最初请求",
        "state": "最近回复",
        "next": "下一步",
        "answer": "回应最新请求",
        "open": "未解决的错误",
        "unanswered": "尚无结果的调用",
        "earlier": "更早的摘要",
        "looked": "查看过",
        "decided": "决定",
        "modified": "已修改",
        "error": "出错",
        "failed": "失败",
        "ok": "成功",
        "passed": "通过",
        "no_result": "尚无结果",
        "ran": "运行",
        "tests": "测试",
        "lines": "行",
        "removed": "删除",
        "whitespace": "仅空白变化",
        "truncated": "条较早的工具结果已截断",
        "refused": "被用户拒绝",
        "refused_call": "用户拒绝了",
        "added": "新增",
        "deleted": "删除",
        "no_files": "无文件",
        "bookkeeping": "辅助操作",
        "names": "其他名称",
        "more_paths": "……另有 {count} 个文件路径",
        "correction": "纠正",
        "correcting": "针对",
        "fixed": "出错，后已解决",
        "open_tasks": "未完成的任务",
        "await": "等待 {calls} 的结果",
        "answered": "无——最新请求已得到答复",
        "asked": "等待用户回答",
        "continue": "继续处理最新请求",
        "was_doing": "进行到",
        "since": "之后已完成",
        "earlier_goal": "更早的目标",
        "earlier_request": "更早的请求",
        "pending_before": "更早的待办",
        "pending": "待办",
        "in_progress": "进行中",
    },
    "en": {
        "first": "First request",
        "later": "Later request",
        "last": "Latest request",
        "same": "the first request",
        "state": "Latest reply",
        "next": "Next step",
        "answer": "answer the latest request",
        "open": "Open error",
        "unanswered": "Calls without a result yet",
        "earlier": "Earlier summary",
        "looked": "Looked at",
        "decided": "Decided",
        "modified": "modified",
        "error": "error",
        "failed": "failed",
        "ok": "ok",
        "passed": "passed",
        "no_result": "no result yet",
        "ran": "Ran",
        "tests": "Tests",
        "lines": "lines",
        "removed": "removed",
        "whitespace": "whitespace only",
        "truncated": "older tool results truncated",
        "refused": "refused by the user",
        "refused_call": "Refused by the user",
        "added": "added",
        "deleted": "deleted",
        "no_files": "no files",
        "bookkeeping": "Bookkeeping",
        "names": "Other names",
        "more_paths": "… and {count} more file paths",
        "correction": "Correction",
        "correcting": "to",
        "fixed": "error, fixed later",
        "open_tasks": "Open tasks",
        "await": "wait for the result of {calls}",
        "answered": "none — the last request was answered",
        "asked": "waiting for the user's answer to",
        "continue": "continue the latest request",
        "was_doing": "it was at",
        "since": "done since",
        "earlier_goal": "Earlier goal",
        "earlier_request": "Earlier request",
        "pending_before": "Pending before",
        "pending": "pending",
        "in_progress": "in progress",
    },
}

FIRST_LABELS = tuple(f"{labels['first']}: " for labels in LABELS.values())
LATEST_LABELS = tuple(f"{labels['last']}: " for labels in LABELS.values())
NAMES_LABELS = frozenset(labels["names"] for labels in LABELS.values())
OPEN_LABELS = tuple(f"{labels['open']}: " for labels in LABELS.values())
# Lines of a previous summary's last part that a newer one replaces (not carried as they are).
SUPERSEDED = tuple(
    f"{labels[key]}: " for labels in LABELS.values() for key in ("last", "state", "next", "open")
)
# What a previous summary had still to do: stale once the agent's own task list says newer.
TASK_LABELS = tuple(
    f"{labels[key]}: " for labels in LABELS.values() for key in ("open_tasks", "pending_before")
)

# "the first request", in every language: what a summary says when the latest request is the first
SAME_WORDS = frozenset(words["same"] for words in LABELS.values())
