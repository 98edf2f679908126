"""Seeded fixture workspace and per-prompt tool-call script for the lab model server.

Everything here is a pure function of ``(seed, n_prompts, profile)``:

* ``build_workload`` creates the fixture files (English prose, Python and JavaScript code, CSV,
  JSON and Chinese notes, of varied size) and, for every prompt, the prompt text, the list of
  *steps* (each step is one assistant message with one or two tool calls) and the final answer.
* The script is computed up front against a *simulated* copy of the workspace, so that every
  ``edit`` names text that really exists when Pi executes it (provided the earlier prompts ran).
* The server picks the step from the request's last message only (the prompt text, or the id of
  the last tool call, which encodes prompt and step as ``call_p{P}_s{S}_{K}``), never from the
  request's size, so compaction settings cannot change the workload.

Profiles: ``mixed`` (default), ``chinese`` (Chinese prompts, notes and answers) and ``heavy``
(bigger files and more reads per prompt, used to provoke context overflow). For the rough lab
(``lab.rough``): ``marathon`` (the Chinese workspace at twice the size; every prompt reads 12 files
one per step, so one run can overflow more than once) and ``chat`` (the mixed workspace; every
prompt is answered without tools: one model request per prompt).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

PROFILES = ("mixed", "chinese", "heavy", "marathon", "chat")

_WORDS = (
    "cache buffer parser token session branch summary window budget request response stream "
    "header payload record entry cursor index offset limit retry timeout worker queue event "
    "handler config option value field schema module package import export builder factory "
    "adapter bridge client server socket channel signal thread lock mutex pool batch chunk "
    "segment frame packet message prompt model context report metric counter gauge histogram "
    "sample trace span logger filter mapper reducer planner scheduler runner checker validator "
    "formatter renderer encoder decoder reader writer loader store snapshot journal ledger"
).split()

_ADJ = (
    "fast stable small large stale fresh local remote partial complete lazy eager simple nested "
    "sorted unique shared private public default custom legacy modern strict loose"
).split()

_VERBS = (
    "load parse merge split count render build check update compute format collect filter "
    "resolve rebuild flush trim scan index encode decode verify"
).split()

_SEARCH_WORDS = ("cache", "session", "token", "summary", "window", "budget", "retry", "branch")

_ZH_SENTENCES = (
    "这个模块负责读取会话文件并把每一行解析成一个条目。",
    "压缩之后，旧的消息会被摘要替换，只保留最近的一部分上下文。",
    "我们需要统计每次请求的输入令牌数量，并和实际用量进行比较。",
    "如果上下文超过窗口大小，提供方会返回一个错误，代理必须先压缩再重试。",
    "分支摘要记录了用户离开的那条分支上完成了哪些工作。",
    "配置文件里的保留令牌数决定了什么时候触发自动压缩。",
    "缓存命中的令牌通常比普通输入便宜得多，所以前缀缓存很重要。",
    "测试用例应该覆盖空文件、超长行以及包含中文字符的文本。",
    "每个条目都有一个唯一的标识符和一个指向父条目的引用。",
    "当会话很长时，摘要会逐渐丢失早期的细节，这种漂移需要被测量。",
    "工具调用的结果可能非常大，尤其是读取整个文件的时候。",
    "我们用确定性的随机种子来生成工作区，保证每次运行结果一致。",
    "估算器按照每四个字符一个令牌来计算，对中文文本明显偏低。",
    "回放功能会根据记录的设置重新计算什么时候应该压缩。",
    "日志里应该包含时间戳、请求编号以及耗时。",
    "请不要修改工作区以外的任何文件。",
    "重构之后，解析器的速度提高了大约百分之三十。",
    "旧版本的会话格式没有父条目字段，需要先迁移再读取。",
    "报告需要列出每个会话的压缩次数和被摘要的令牌数量。",
    "如果编辑失败，代理会收到一条错误信息并可以重新尝试。",
    "这个函数把相邻的短消息合并成一个批次再发送。",
    "我们在周五之前需要完成第一版的文档。",
    "数据文件按日期排序，每一行包含会话编号和令牌数。",
    "窗口越小，压缩就越频繁，摘要的质量也越重要。",
    "用户希望回答尽量简短，并且保留准确的文件路径。",
    "下一步是检查摘要里是否仍然包含最初的目标。",
    "读取大文件时可以使用偏移量和行数限制。",
    "这个配置项默认关闭，只有在调试时才需要打开。",
    "所有的路径都相对于工作区的根目录。",
    "中文文本的字符数和令牌数之间的比例与英文完全不同。",
)

_ZH_TOPICS = ("会话", "压缩", "缓存", "分支", "令牌", "摘要", "回放", "窗口")


@dataclass
class ToolCall:
    name: str
    args: dict


@dataclass
class Step:
    calls: list[ToolCall]
    text: str = ""  # optional assistant text sent before the tool calls


@dataclass
class PromptScript:
    index: int
    prompt: str
    steps: list[Step]
    final: str

    @property
    def n_tool_calls(self) -> int:
        return sum(len(s.calls) for s in self.steps)


@dataclass
class Workload:
    seed: int
    profile: str
    files: dict[str, str]
    prompts: list[PromptScript] = field(default_factory=list)

    def prompt_index(self, text: str) -> int | None:
        """Index of the prompt whose text is exactly ``text`` (None when unknown)."""
        for p in self.prompts:
            if p.prompt == text:
                return p.index
        m = re.match(r"^(?:Task|任务)\s*(\d+)", text.strip())
        if m:
            idx = int(m.group(1)) - 1
            if 0 <= idx < len(self.prompts):
                return idx
        return None

    def write_workspace(self, root: Path) -> None:
        """Create the fixture files under ``root`` (which should be empty)."""
        for rel, content in sorted(self.files.items()):
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content, encoding="utf-8")


def call_id(prompt: int, step: int, k: int) -> str:
    """Tool call id encoding prompt and step (parsed back by ``parse_call_id``)."""
    return f"call_p{prompt:03d}_s{step:02d}_{k}"


_CALL_RE = re.compile(r"call_p(\d+)_s(\d+)_(\d+)")


def parse_call_id(tool_call_id: str) -> tuple[int, int] | None:
    m = _CALL_RE.search(tool_call_id or "")
    if not m:
        return None
    return int(m.group(1)), int(m.group(2))


# ---------------------------------------------------------------------------
# Fixture text generators
# ---------------------------------------------------------------------------


def _sentence(rng: random.Random) -> str:
    n = rng.randint(7, 15)
    words = [rng.choice(_WORDS if rng.random() < 0.75 else _ADJ) for _ in range(n)]
    s = " ".join(words)
    return s[0].upper() + s[1:] + "."


def _prose(rng: random.Random, target: int, title: str) -> str:
    out = [f"# {title}\n"]
    size = len(out[0])
    section = 1
    while size < target:
        if rng.random() < 0.25:
            head = f"\n## {section}. {rng.choice(_ADJ).title()} {rng.choice(_WORDS)}\n"
            section += 1
            out.append(head)
            size += len(head)
        para = " ".join(_sentence(rng) for _ in range(rng.randint(2, 5))) + "\n"
        out.append("\n" + para)
        size += len(para) + 1
    return "".join(out)


def _zh_prose(rng: random.Random, target: int, title: str) -> str:
    out = [f"# {title}\n"]
    size = len(out[0])
    section = 1
    while size < target:
        if rng.random() < 0.25:
            head = f"\n## 第{section}节 {rng.choice(_ZH_TOPICS)}\n"
            section += 1
            out.append(head)
            size += len(head)
        para = "".join(rng.choice(_ZH_SENTENCES) for _ in range(rng.randint(2, 5))) + "\n"
        out.append("\n" + para)
        size += len(para) + 1
    return "".join(out)


class _Names:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def fresh(self, fmt: str) -> str:
        for _ in range(1000):
            name = fmt.format(verb=self.rng.choice(_VERBS), noun=self.rng.choice(_WORDS),
                              adj=self.rng.choice(_ADJ))
            if name not in self.used:
                self.used.add(name)
                return name
        raise RuntimeError("name space exhausted")


def _python(rng: random.Random, names: _Names, target: int, module: str) -> str:
    out = [f'"""{module}: {_sentence(rng)}"""\n\nfrom __future__ import annotations\n\n']
    size = len(out[0])
    while size < target:
        fn = names.fresh("{verb}_{adj}_{noun}")
        k = rng.randint(2, 9)
        lim = rng.randint(5, 50)
        body = (
            f"\ndef {fn}(values, limit={lim}):\n"
            f'    """{_sentence(rng)}"""\n'
            f"    total = 0\n"
            f"    for i, v in enumerate(values):\n"
            f"        if i >= limit:\n"
            f"            break\n"
            f"        total += v * {k}  # {rng.choice(_SEARCH_WORDS)} weight\n"
            f"    return total\n\n"
        )
        out.append(body)
        size += len(body)
    return "".join(out)


def _javascript(rng: random.Random, names: _Names, target: int) -> str:
    out = ["// " + _sentence(rng) + "\n'use strict';\n"]
    size = len(out[0])
    while size < target:
        fn = names.fresh("{verb}{noun}")
        fn = fn[0] + fn[1:]
        body = (
            f"\nfunction {fn}(items) {{\n"
            f"  // {_sentence(rng)}\n"
            f"  return items.filter((x) => x.{rng.choice(_WORDS)} > {rng.randint(1, 99)}).length;\n"
            f"}}\n"
        )
        out.append(body)
        size += len(body)
    names_list = re.findall(r"function (\w+)", "".join(out))
    out.append("\nmodule.exports = { " + ", ".join(names_list) + " };\n")
    return "".join(out)


def _csv(rng: random.Random, rows: int) -> str:
    lines = ["date,session,tokens,cached,compactions"]
    for i in range(rows):
        lines.append(
            f"2025-{1 + i % 12:02d}-{1 + (i * 7) % 28:02d},s{rng.randint(100, 999)},"
            f"{rng.randint(500, 90000)},{rng.randint(0, 40000)},{rng.randint(0, 9)}"
        )
    return "\n".join(lines) + "\n"


def _json_config(rng: random.Random) -> str:
    keys = sorted({rng.choice(_WORDS) for _ in range(12)})
    body = ",\n".join(f'  "{k}": {rng.randint(1, 5000)}' for k in keys)
    return "{\n" + body + "\n}\n"


def _build_files(rng: random.Random, profile: str) -> dict[str, str]:
    names = _Names(rng)
    files: dict[str, str] = {}
    scale = 2.0 if profile in ("heavy", "marathon") else 1.0

    def size(lo: int, hi: int) -> int:
        return int(rng.randint(lo, hi) * scale)

    if profile in ("chinese", "marathon"):
        files["README.md"] = _zh_prose(rng, size(800, 1600), "项目说明")
        topics = ["会话格式", "压缩策略", "令牌估算", "分支管理", "回放设计", "缓存说明", "发布计划", "测试计划"]
        for i, t in enumerate(topics):
            files[f"notes/note_{i + 1:02d}.md"] = _zh_prose(rng, size(600, 3200), t)
        for _ in range(2):
            mod = f"src/{names.fresh('{noun}_{verb}')}.py"
            files[mod] = _python(rng, names, size(800, 2500), mod)
        files["docs/overview.md"] = _prose(rng, size(600, 1500), "Overview")
        files["data/usage.csv"] = _csv(rng, rng.randint(15, 40))
    else:
        files["README.md"] = _prose(rng, size(900, 1800), "Fixture project")
        for _ in range(5):
            mod = f"src/{names.fresh('{noun}_{verb}')}.py"
            files[mod] = _python(rng, names, size(700, 5200), mod)
        for _ in range(2):
            files[f"web/{names.fresh('{noun}')}.js"] = _javascript(rng, names, size(500, 2600))
        for title in ("architecture", "operations", "glossary"):
            files[f"docs/{title}.md"] = _prose(rng, size(700, 5000), title.title())
        for i, t in enumerate(("会话格式", "压缩策略")):
            files[f"notes/note_{i + 1:02d}.md"] = _zh_prose(rng, size(400, 1800), t)
        files["data/usage.csv"] = _csv(rng, rng.randint(20, 60))
        files["data/budget.csv"] = _csv(rng, rng.randint(10, 30))
        files["config/settings.json"] = _json_config(rng)
    return files


# ---------------------------------------------------------------------------
# Script generation over a simulated workspace
# ---------------------------------------------------------------------------


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


class _Scripter:
    def __init__(self, rng: random.Random, files: dict[str, str], profile: str):
        self.rng = rng
        self.files = dict(files)  # simulated workspace state
        self.profile = profile
        self.zh = profile in ("chinese", "marathon")

    # -- helpers ---------------------------------------------------------
    def pick(self, pattern: str, k: int = 1) -> list[str]:
        cands = sorted(p for p in self.files if re.search(pattern, p))
        if not cands:
            cands = sorted(self.files)
        k = min(k, len(cands))
        return self.rng.sample(cands, k)

    def task(self, index: int, text_en: str, text_zh: str) -> str:
        return f"任务 {index + 1}：{text_zh}" if self.zh else f"Task {index + 1}: {text_en}"

    def say(self, en: str, zh: str) -> str:
        return zh if self.zh else en

    # -- task kinds ------------------------------------------------------
    def inspect(self, p: int) -> PromptScript:
        n = self.rng.randint(1, 3) if self.profile != "heavy" else self.rng.randint(3, 5)
        paths = self.pick(r"\.(py|md|js)$", n)
        steps: list[Step] = []
        i = 0
        while i < len(paths):
            if i + 1 < len(paths) and self.rng.random() < 0.35:
                steps.append(Step([ToolCall("read", {"path": paths[i]}), ToolCall("read", {"path": paths[i + 1]})]))
                i += 2
            else:
                steps.append(Step([ToolCall("read", {"path": paths[i]})]))
                i += 1
        steps[0].text = self.say(f"I'll start by reading `{paths[0]}`.", f"我先读取 `{paths[0]}`。")
        if self.rng.random() < 0.6:
            steps.append(Step([ToolCall("bash", {"command": "wc -l " + " ".join(paths)})]))
        facts = "; ".join(f"`{q}` has {_lines(self.files[q])} lines" for q in paths)
        facts_zh = "；".join(f"`{q}` 共 {_lines(self.files[q])} 行" for q in paths)
        listing = ", ".join(f"`{q}`" for q in paths)
        prompt = self.task(p, f"Read {listing} and tell me briefly what each file is for and how long it is.",
                           f"阅读 {listing}，简要说明每个文件的用途和长度。")
        final = self.say(f"Summary of task {p + 1}: {facts}. They are part of the fixture project; no changes were needed.",
                         f"任务 {p + 1} 小结：{facts_zh}。这些文件属于测试工作区，不需要修改。")
        return PromptScript(p, prompt, steps, final)

    def search(self, p: int) -> PromptScript:
        word = self.rng.choice(_SEARCH_WORDS)
        dirs = "src docs" if not self.zh else "src docs notes"
        matches = sorted(
            (path, ln) for path, text in self.files.items() if path.split("/")[0] in dirs.split()
            for ln, line in enumerate(text.split("\n"), 1) if word in line
        )
        steps = [Step([ToolCall("bash", {"command": f"grep -rn '{word}' {dirs} | sort | head -n 40"})],
                      self.say(f"Searching for `{word}`.", f"搜索 `{word}`。"))]
        hit_files = sorted({m[0] for m in matches})
        if hit_files:
            steps.append(Step([ToolCall("read", {"path": self.rng.choice(hit_files)})]))
        prompt = self.task(p, f"Find where the word '{word}' is used in {dirs.replace(' ', ' and ')} and show me one of those files.",
                           f"在 {dirs} 中查找 '{word}' 出现的位置，并打开其中一个文件。")
        final = self.say(
            f"'{word}' appears on {len(matches)} lines in {len(hit_files)} files"
            + (f", for example `{hit_files[0]}`." if hit_files else "."),
            f"'{word}' 在 {len(hit_files)} 个文件中共出现 {len(matches)} 行" + (f"，例如 `{hit_files[0]}`。" if hit_files else "。"),
        )
        return PromptScript(p, prompt, steps, final)

    def edit(self, p: int) -> PromptScript:
        path = self.pick(r"\.py$")[0]
        text = self.files[path]
        defs = [ln for ln in text.split("\n") if ln.startswith("def ") and text.count(ln) == 1]
        if not defs:
            return self.inspect(p)
        line = self.rng.choice(defs)
        fn = line[4:line.index("(")]
        new_line = f"{line}  # reviewed in task {p + 1}"
        steps = [
            Step([ToolCall("read", {"path": path})], self.say(f"Let me look at `{path}` first.", f"先查看 `{path}`。")),
            Step([ToolCall("edit", {"path": path, "edits": [{"oldText": line, "newText": new_line}]})]),
        ]
        if self.rng.random() < 0.7:
            steps.append(Step([ToolCall("bash", {"command": f"grep -n 'reviewed in task' {path}"})]))
        self.files[path] = text.replace(line, new_line, 1)
        prompt = self.task(p, f"In {path}, mark the function {fn} as reviewed with a trailing comment on its def line.",
                           f"在 {path} 中，给函数 {fn} 的定义行加上已审阅的注释。")
        final = self.say(f"Marked `{fn}` in `{path}` as reviewed (comment `# reviewed in task {p + 1}`).",
                         f"已在 `{path}` 中把 `{fn}` 标记为已审阅（注释 `# reviewed in task {p + 1}`）。")
        return PromptScript(p, prompt, steps, final)

    def write(self, p: int) -> PromptScript:
        srcs = self.pick(r"\.(md|csv|json|py)$", self.rng.randint(1, 2))
        target = f"notes/task_{p + 1:03d}.md"
        if self.zh:
            body = f"# 任务 {p + 1} 笔记\n\n" + "\n".join(
                f"- `{s}`：{_lines(self.files[s])} 行。{self.rng.choice(_ZH_SENTENCES)}" for s in srcs) + "\n"
            body += "\n" + "".join(self.rng.choice(_ZH_SENTENCES) for _ in range(self.rng.randint(2, 6))) + "\n"
        else:
            body = f"# Notes for task {p + 1}\n\n" + "\n".join(
                f"- `{s}`: {_lines(self.files[s])} lines. {_sentence(self.rng)}" for s in srcs) + "\n"
            body += "\n" + " ".join(_sentence(self.rng) for _ in range(self.rng.randint(2, 6))) + "\n"
        steps = [Step([ToolCall("read", {"path": s})]) for s in srcs]
        steps.append(Step([ToolCall("write", {"path": target, "content": body})],
                          self.say(f"Writing the notes to `{target}`.", f"把笔记写入 `{target}`。")))
        if self.rng.random() < 0.6:
            steps.append(Step([ToolCall("bash", {"command": "ls notes"})]))
        self.files[target] = body
        listing = ", ".join(srcs)
        prompt = self.task(p, f"Read {listing} and write short notes about it to {target}.",
                           f"阅读 {listing}，并把简短的笔记写到 {target}。")
        final = self.say(f"Wrote `{target}` ({_lines(body)} lines) with notes on {listing}.",
                         f"已写入 `{target}`（{_lines(body)} 行），记录了 {listing} 的要点。")
        return PromptScript(p, prompt, steps, final)

    def survey(self, p: int) -> PromptScript:
        path = self.pick(r"\.(csv|json|md)$")[0]
        steps = [Step([ToolCall("bash", {"command": "ls README.md " + " ".join(sorted({q.split('/')[0] for q in self.files if '/' in q}))})]),
                 Step([ToolCall("bash", {"command": f"head -n 12 {path}"})])]
        prompt = self.task(p, f"Give me an overview of the workspace layout and show the top of {path}.",
                           f"概述一下工作区的目录结构，并显示 {path} 的开头部分。")
        dirs = sorted({q.split("/")[0] for q in self.files if "/" in q})
        final = self.say(f"The workspace has {len(self.files)} files in {', '.join(dirs)}; `{path}` starts as shown above.",
                         f"工作区共有 {len(self.files)} 个文件，分布在 {', '.join(dirs)} 中；`{path}` 的开头如上所示。")
        return PromptScript(p, prompt, steps, final)

    def marathon(self, p: int) -> PromptScript:
        paths = self.pick(r"\.(py|md)$", 12)
        steps = [Step([ToolCall("read", {"path": q})]) for q in paths]
        steps[0].text = f"我逐个读取这 {len(paths)} 个文件。"
        facts = "；".join(f"`{q}` 共 {_lines(self.files[q])} 行" for q in paths)
        prompt = self.task(p, "", f"逐个阅读 {', '.join(paths)}，然后列出每个文件的行数。")
        return PromptScript(p, prompt, steps, f"任务 {p + 1} 小结：{facts}。")

    def chat(self, p: int) -> PromptScript:
        dirs = sorted({q.split("/")[0] for q in self.files if "/" in q})
        topic = self.rng.choice(_SEARCH_WORDS)
        prompt = self.task(p, f"Without running tools: in two sentences, how would you approach the '{topic}' "
                              f"handling in this project?", "")
        final = (f"I would start from the modules in {', '.join(dirs)} that mention '{topic}' and check how the "
                 f"{len(self.files)} files fit together. Then I would change one function at a time and re-run "
                 f"the checks after each step.")
        return PromptScript(p, prompt, [], final)

    def make(self, p: int) -> PromptScript:
        if self.profile in ("marathon", "chat"):
            return getattr(self, self.profile)(p)
        if self.profile == "heavy":
            kinds = ["inspect"] * 5 + ["edit", "write"]
        elif self.zh:
            kinds = ["inspect", "inspect", "write", "write", "search", "edit"]
        else:
            kinds = ["inspect", "inspect", "search", "edit", "edit", "write", "survey"]
        if p == 0:
            kind = "survey" if self.profile != "heavy" else "inspect"
        else:
            kind = self.rng.choice(kinds)
        return getattr(self, kind)(p)


def build_workload(seed: int, n_prompts: int, profile: str = "mixed") -> Workload:
    """Fixture files and ``n_prompts`` prompt scripts, all derived from ``seed``."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (choose from {PROFILES})")
    rng = random.Random(f"lab-workload:{seed}:{profile}")
    files = _build_files(rng, profile)
    scripter = _Scripter(random.Random(f"lab-script:{seed}:{profile}"), files, profile)
    prompts = [scripter.make(p) for p in range(n_prompts)]
    return Workload(seed=seed, profile=profile, files=files, prompts=prompts)
