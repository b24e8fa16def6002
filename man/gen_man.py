#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generate one man(7) page per exported function of libuswap.

The pages are made from the kernel-doc comment that stands directly above
each USWAP_API declaration in include/uswap/*.h:

    /**
     * name() - summary, one sentence or a short paragraph.
     * @param: what it is.
     *
     * More paragraphs of description.
     *
     * Context: locks, sleeping, threads.
     * Return: values and -E... codes, each optionally followed by its
     * reason in parentheses: -EINVAL (bad slot).
     */
    USWAP_API int name(...);

"Context:" and "Return:" may also start in the middle of a line. An
error code mentioned without a reason is explained, in ERRORS, by the
header's own list of common codes (lines "  -ECODE  meaning" in its first
comment) or else by strerror(). Anything
the script cannot place (a declaration without its comment, a comment
naming another function, a missing Context: or Return:, an unknown error
code) is a warning on stderr; with --strict the exit status is then 1, so
that a check can insist on none.

usage: gen_man.py [--version V] [--strict] [--list] SOURCE_DIR OUT_DIR
  writes OUT_DIR/man3/NAME.3 for each function (and removes stale pages
  there); --list prints "NAME HEADER" lines and writes nothing.
"""

import datetime
import errno
import glob
import os
import re
import sys

SECTION_RE = re.compile(r"(?:(?<=\s)|^)(Context|Return):\s*")
ERRNO_RE = re.compile(r"-(E[A-Z0-9]+)\b")
FUNC_REF_RE = re.compile(r"\b([A-Za-z_]\w*)\(\)")
PARAM_REF_RE = re.compile(r"@(\w+)")

warnings = 0


def warn(where, msg):
    global warnings
    warnings += 1
    print(f"gen_man.py: {where}: {msg}", file=sys.stderr)


class Doc:
    def __init__(self):
        self.summary = ""
        self.params = []        # (name, text)
        self.paragraphs = []
        self.context = ""
        self.ret = ""
        self.raw = ""
        self.common_errors = {}


def comment_lines(block):
    """The text lines of a /** ... */ block, without the leading ' * '."""
    out = []
    for line in block.split("\n"):
        line = line.strip()
        if line.startswith("/**"):
            line = line[3:]
        if line.endswith("*/"):
            line = line[:-2]
        line = line.strip()
        if line.startswith("*"):
            line = line[1:]
            if line.startswith(" "):
                line = line[1:]
        out.append(line.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def parse_doc(name, block, where):
    lines = comment_lines(block)
    doc = Doc()
    doc.raw = "\n".join(lines)
    m = re.match(r"^(\w+)\(\)\s+-\s+(.*)$", lines[0]) if lines else None
    if not m:
        warn(where, f"the comment above {name}() does not start with '{name}() - summary'")
        return None
    if m.group(1) != name:
        warn(where, f"the comment above {name}() is about {m.group(1)}(): "
                    f"each USWAP_API function needs its own")
        return None
    text = "\n".join([m.group(2)] + lines[1:])

    # Split off the Context: and Return: sections (they may start mid-line).
    parts = SECTION_RE.split(text)
    main, sections = parts[0], {}
    for i in range(1, len(parts), 2):
        key = parts[i]
        if key in sections:
            warn(where, f"{name}(): two {key}: sections")
        sections[key] = " ".join(parts[i + 1].split())
    doc.context = sections.get("Context", "")
    doc.ret = sections.get("Return", "")

    # Main part: summary paragraph, @params, further paragraphs.
    para, paras, params, cur_param = [], [], [], None
    for line in main.split("\n"):
        pm = re.match(r"^@(\w+):\s*(.*)$", line)
        if pm:
            if para:
                paras.append(" ".join(para))
                para = []
            cur_param = [pm.group(1), pm.group(2)]
            params.append(cur_param)
        elif not line.strip():
            if para:
                paras.append(" ".join(para))
                para = []
            cur_param = None
        elif cur_param is not None:
            cur_param[1] += " " + line.strip()
        else:
            para.append(line.strip())
    if para:
        paras.append(" ".join(para))
    if not paras:
        warn(where, f"{name}(): empty summary")
        return None
    doc.summary = paras[0]
    doc.paragraphs = paras[1:]
    doc.params = [(p, " ".join(t.split())) for p, t in params]
    return doc


def header_errors(text):
    """{code: meaning} from "  -ECODE  meaning" lines of the first comment."""
    m = re.match(r"\s*(?:/\*.*?\*/\s*)?(/\*.*?\*/)", text, re.S)
    first = m.group(0) if m else ""
    out, cur = {}, None
    for line in comment_lines(first):
        em = re.match(r"^\s*-(E[A-Z0-9]+)\s{2,}(.*)$", line)
        if em:
            cur = em.group(1)
            out[cur] = em.group(2).strip()
        elif cur and line.startswith("    ") and line.strip():
            out[cur] += " " + line.strip()
        else:
            cur = None
    return out


def read_headers(src):
    """Yield (name, header, prototype, doc) for each USWAP_API declaration."""
    hdr_dir = os.path.join(src, "include", "uswap")
    umbrella = open(os.path.join(hdr_dir, "uswap.h")).read()
    structs = {}
    decls = []
    for path in sorted(glob.glob(os.path.join(hdr_dir, "*.h"))):
        hname = os.path.basename(path)
        text = open(path).read()
        for sm in re.finditer(r"^struct (\w+) \{\n.*?^\};", text, re.M | re.S):
            structs[sm.group(1)] = sm.group(0)
        common = header_errors(text)
        include = ("uswap/uswap.h" if f"<uswap/{hname}>" in umbrella
                   else f"uswap/{hname}")
        for dm in re.finditer(r"^[ \t]*USWAP_API\b(.*?);", text, re.M | re.S):
            decl = " ".join(dm.group(1).split())
            nm = re.match(r"^[^(]*?(\w+)\s*\(", decl)
            if not nm:
                warn(hname, f"cannot read the declaration 'USWAP_API {decl}'")
                continue
            name = nm.group(1)
            line = text.count("\n", 0, dm.start()) + 1
            where = f"include/uswap/{hname}:{line}"
            before = text[:dm.start()].rstrip()
            doc = None
            if before.endswith("*/"):
                start = before.rfind("/*")
                block = before[start:]
                if block.startswith("/**"):
                    doc = parse_doc(name, block, where)
                else:
                    warn(where, f"{name}() has a comment above it, but not a "
                                f"kernel-doc one ('/**')")
            else:
                warn(where, f"{name}() has no kernel-doc comment directly above it: "
                            f"write '/** {name}() - ...' with Context: and Return:")
            if doc:
                void = re.match(r"^void\s+\w", decl) is not None
                if not doc.context:
                    warn(where, f"{name}(): no 'Context:' in its comment")
                if not doc.ret and not void:
                    warn(where, f"{name}(): no 'Return:' in its comment")
            if doc:
                doc.common_errors = common
            decls.append((name, hname, include, decl, doc, where))
    return decls, structs


# ---- roff ----

def esc(s):
    """Escape plain text for roff (not at the start of a line: see para())."""
    s = s.replace("\\", "\\e")
    s = s.replace("-", "\\-")
    return s


def inline(s, names, params):
    """Plain text with markup: function names bold, @params italic,
    -E codes bold."""
    out = esc(s)

    def fref(m):
        n = m.group(1)
        return f"\\fB{n}\\fR()" if n in names else f"{n}()"
    out = FUNC_REF_RE.sub(fref, out)
    out = PARAM_REF_RE.sub(lambda m: f"\\fI{m.group(1)}\\fR", out)
    out = re.sub(r"\\-(E[A-Z0-9]+)\b", r"\\fB\\-\1\\fR", out)
    return out


def para(s):
    """A filled paragraph: roff lines must not start with . or '."""
    lines = []
    line = ""
    for word in s.split(" "):
        if line and len(line) + 1 + len(word) > 72:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return "\n".join(("\\&" + ln) if ln[:1] in (".", "'") else ln for ln in lines)


def capitalize(s):
    return s[:1].upper() + s[1:] if s[:1].islower() else s


def first_sentence(s):
    """The NAME line's summary: the first sentence, cut before its first
    ": ", "; " or " (" when it is too long for a whatis line."""
    m = re.search(r"(?<!e\.g)(?<!i\.e)\.(\s|$)", s)
    s = s[:m.start()] if m else s.rstrip(".")
    if len(s) > 70:
        cuts = [i for i in (s.find(": "), s.find("; "), s.find(" (")) if i >= 15]
        if cuts:
            s = s[:min(cuts)]
    return s


def prototype_lines(decl):
    """The declaration wrapped at commas, continuations under the '('."""
    decl = decl + ";"
    if len(decl) <= 72:
        return [decl]
    open_at = decl.index("(") + 1
    lines, cur = [], ""
    for piece in re.split(r"(?<=,) ", decl):
        if cur and len(cur) + 1 + len(piece) > 72:
            lines.append(cur)
            cur = " " * open_at + piece
        else:
            cur = f"{cur} {piece}" if cur else piece
    lines.append(cur)
    return lines


def error_list(doc):
    """[(code, reason)] in order of first mention in Return:, or anywhere."""
    text = doc.ret or doc.raw
    codes = []
    reasons = {}
    for m in ERRNO_RE.finditer(text):
        code = m.group(1)
        if code not in reasons:
            codes.append(code)
            reasons[code] = []
        rest = text[m.end():]
        rm = re.match(r"\s*\(", rest)
        if rm:
            depth, i = 0, rm.end() - 1
            for j in range(i, len(rest)):
                if rest[j] == "(":
                    depth += 1
                elif rest[j] == ")":
                    depth -= 1
                    if depth == 0:
                        reasons[code].append(rest[i + 1:j].strip())
                        break
    return [(c, "; ".join(reasons[c])) for c in codes]


def page(name, include, decl, doc, structs, names, examples, version, date):
    params = {p for p, _ in doc.params}
    summary = PARAM_REF_RE.sub(lambda m: m.group(1), first_sentence(doc.summary))
    out = [
        f'.TH {name.upper()} 3 {date} "uswap {version}" "uswap Library Functions"',
        ".\\\" Generated by man/gen_man.py from the comment above the declaration;",
        ".\\\" edit that comment, not this page.",
        ".nh",
        ".SH NAME",
        f"{esc(name)} \\- {esc(summary)}",
        ".SH SYNOPSIS",
        ".nf",
        f".B #include <{include}>",
        ".PP",
    ]
    proto = prototype_lines(decl)
    proto[0] = proto[0].replace(name + "(", f"\\fB{name}\\fP(", 1)
    out += [("\\&" + esc(line).replace("\\efB", "\\fB").replace("\\efP", "\\fP"))
            for line in proto]
    out += [".fi", ".PP", "Link with \\fI\\-luswap\\fR (\\fBpkg\\-config \\-\\-libs uswap\\fR)."]

    out += [".SH DESCRIPTION", para(inline(capitalize(doc.summary), names, params))]
    if doc.params:
        for p, t in doc.params:
            out += [".TP", f".I {p}", para(inline(capitalize(t), names, params))]
    for p in doc.paragraphs:
        out += [".PP", para(inline(p, names, params))]
    used = [s for s in re.findall(r"struct (\w+)", decl) if s in structs]
    for s in dict.fromkeys(used):
        out += [".PP", f"The \\fIstruct {s}\\fR is:", ".PP", ".in +4n", ".EX"]
        out += [("\\&" + esc(line.expandtabs(8))) for line in structs[s].split("\n")]
        out += [".EE", ".in"]
    if doc.context:
        out += [".SS Context", para(inline(capitalize(doc.context), names, params))]

    out.append(".SH RETURN VALUE")
    out.append(para(inline(capitalize(doc.ret), names, params)) if doc.ret else "None.")
    errs = error_list(doc)
    if errs:
        out.append(".SH ERRORS")
        for code, why in errs:
            if not why:
                why = doc.common_errors.get(code)
            if not why:
                num = getattr(errno, code, None)
                if num is None:
                    warn(name, f"-{code} is not an errno name")
                    why = ""
                else:
                    why = os.strerror(num)
            why = capitalize(why.rstrip(" ;,.")) + "."
            out += [".TP", f".B \\-{code}", para(inline(why, names, params))]
    if examples:
        out.append(".SH EXAMPLE")
        out.append(para(", ".join(f"\\fIdocs/examples/{e}\\fR" for e in examples) +
                        " in the source tree " + ("calls" if len(examples) == 1 else "call") +
                        f" \\fB{name}\\fR(); it is built and run by the packaging check."))
    refs = [r for r in dict.fromkeys(FUNC_REF_RE.findall(doc.raw)) if r in names and r != name]
    out.append(".SH SEE ALSO")
    see = [f".BR {r} (3)," for r in sorted(refs)] + [".BR uswap (7)"]
    out += see
    return "\n".join(out) + "\n"


def main(argv):
    args = argv[1:]
    version = "0"
    listing = False
    strict = False
    while args and args[0].startswith("--"):
        if args[0] == "--version":
            version = args[1]
            args = args[2:]
        elif args[0] == "--strict":
            strict = True
            args = args[1:]
        elif args[0] == "--list":
            listing = True
            args = args[1:]
        else:
            print(__doc__, file=sys.stderr)
            return 2
    if len(args) != (1 if listing else 2):
        print(__doc__, file=sys.stderr)
        return 2
    src = args[0]
    decls, structs = read_headers(src)
    seen = {}
    for name, hname, *_ in decls:
        if name in seen:
            warn(hname, f"{name}() is declared USWAP_API twice ({seen[name]}, {hname})")
        seen[name] = hname
    if listing:
        for name, hname, *_ in decls:
            print(name, f"include/uswap/{hname}")
        return 1 if warnings and strict else 0

    out_dir = os.path.join(args[1], "man3")
    os.makedirs(out_dir, exist_ok=True)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    day = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).date()
           if epoch else datetime.date.today())
    names = set(seen)
    example_src = {}
    for ex in sorted(glob.glob(os.path.join(src, "docs", "examples", "*.c"))):
        example_src[os.path.basename(ex)] = open(ex).read()
    written = set()
    for name, hname, include, decl, doc, where in decls:
        if doc is None:
            continue
        examples = [e for e, t in example_src.items() if re.search(rf"\b{name}\(", t)]
        text = page(name, include, decl, doc, structs, names, examples, version,
                    day.isoformat())
        path = os.path.join(out_dir, f"{name}.3")
        written.add(f"{name}.3")
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            with open(path, "w") as f:
                f.write(text)
    for stale in os.listdir(out_dir):
        if stale.endswith(".3") and stale not in written:
            os.remove(os.path.join(out_dir, stale))
    return 1 if warnings and strict else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
