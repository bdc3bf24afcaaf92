"""The README and docs/ hold to the code and to each other: the README stays short, every
citation of a state-model rule or of a documented section names one that exists, docs/ARCHITECTURE.md
lists the layers scripts/check-layers ranks, every relative link resolves, docs/ENVIRONMENTS.md
keeps what scripts/gen-man reads from it, docs/TESTING.md lists the stages scripts/test runs (each of
which passes on or refuses its arguments), and every function the headers declare follows their
naming rule.

Only the standard library and the files of this checkout: no build, no keyring, no environment
that scripts/test exports."""
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
THIS = pathlib.Path(__file__).resolve()

# The trees whose text may cite the docs (the README too).
TREES = ["Sources", "Tests", "python", "include", "scripts", "docs", "examples", "bench"]
SKIPPED_DIRS = {"__pycache__", ".build", "corpus", "node_modules"}

# One run of white space inside a citation, across a line break and the next line's comment leader
# (Swift and C `///`, `//`, ` *`, Python and shell `#`).
SPACE = r"(?:[ \t]*\n[ \t]*(?:///?|\*|#+)?[ \t]*|[ \t]+)"
RULE = re.compile(r"\brules?" + SPACE + r"(\d+)((?:" + SPACE + r"?(?:[-\u2013\u2014]|to|,|and|or)" + SPACE
                  + r"?\d+)*)", re.I)
SECTION = re.compile(r"\b(README(?:\.md)?|docs/[A-Za-z0-9_-]+\.md)(?:'s)?,?" + SPACE + r'\\?"((?:[^"\\\n]|'
                     + SPACE + r')+?)\\?"')
LINK = re.compile(r"\[(?:[^\]\n]|\n(?!\n))*\]\(([^)\s]+)\)")


def text_files():
    """Every text file of the trees above, and the README: (path, text)."""
    paths = [README]
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts) and path.resolve() != THIS:
                paths.append(path)
    for path in paths:
        try:
            if not path.is_file() or path.stat().st_size > 2_000_000:
                continue
            yield path, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file (fuzz inputs, images)
        except FileNotFoundError:
            continue  # removed while this ran (a build's temporary file)


def where(path, text, offset):
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}"


def without_fences(markdown):
    """The Markdown text outside fenced code blocks (line count kept: fenced lines are blanked)."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return "\n".join(out)


def headings(path):
    return [m.group(1).strip() for m in re.finditer(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$",
                                                    without_fences(path.read_text()), re.M)]


def slug(heading):
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def state_rules():
    """The numbers of docs/STATE.md's rules: the numbered items of its merge-rule section(s)
    ("## The merge rule …", to the next "## " heading), which must run 1, 2, … without a gap."""
    text = (DOCS / "STATE.md").read_text()
    sections = [s for s in re.split(r"(?m)^## ", text) if s.startswith("The merge rule")]
    assert sections, 'docs/STATE.md has no section "## The merge rule …": where are its rules?'
    numbers = [int(n) for s in sections for n in re.findall(r"(?m)^(\d+)\.[ \t]+\*\*", s)]
    assert numbers == list(range(1, len(numbers) + 1)), \
        f"docs/STATE.md's merge rule numbers its rules {numbers}: they must run 1, 2, … once each"
    return set(numbers)


def cited_numbers(first, rest):
    numbers, previous = [int(first)], int(first)
    for separator, number in re.findall(r"([-\u2013\u2014]|to|,|and|or)" + SPACE + r"?(\d+)", rest, re.I):
        number = int(number)
        if separator in "-\u2013\u2014" or separator.lower() == "to":
            numbers += list(range(previous + 1, number + 1))
        else:
            numbers.append(number)
        previous = number
    return numbers


# 1. The README is short, and keeps its two commands.

def test_the_readme_is_at_most_250_lines():
    lines = README.read_text().count("\n")
    assert lines <= 250, (f"README.md has {lines} lines; at most 250. Move the details into docs/ "
                          "(one owner per fact) and link to them.")


def test_the_readme_keeps_its_two_commands():
    text = README.read_text()
    assert "## Two commands on a fresh Debian machine\n" in text, \
        'README.md lost its section "Two commands on a fresh Debian machine" (scripts/fresh-root runs it)'
    section = text.split("## Two commands on a fresh Debian machine", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```sh\n(.*?)^```", section, re.S | re.M)
    assert block, "README.md's two commands are no longer a ```sh block"
    commands = [line.split(" #", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands == ["scripts/install-deps && make install && deviceid get com.example.app", "scripts/test"], \
        f"README.md's two commands changed: {commands}"


# 2. Every citation of a rule names one of docs/STATE.md's.

def test_every_rule_cited_exists_in_docs_state_md():
    rules = state_rules()
    bad, seen = [], 0
    for path, text in text_files():
        for m in RULE.finditer(text):
            seen += 1
            missing = [n for n in cited_numbers(m.group(1), m.group(2)) if n not in rules]
            if missing:
                bad.append(f"{where(path, text, m.start())}: {' '.join(m.group(0).split())!r} "
                           f"names rule {', '.join(map(str, missing))}")
    assert seen, "no rule citation found at all: the pattern is broken"
    assert not bad, (f"citations of rules docs/STATE.md does not have (it has rules {sorted(rules)}, in "
                     '"The merge rule (get)"; a numbered list elsewhere needs another word, e.g. "sandbox step 2"):\n  '
                     + "\n  ".join(bad))


# 3. Every citation of a section names a heading of that file.

def test_every_section_cited_exists():
    cache, bad, seen = {}, [], 0
    for path, text in text_files():
        for m in SECTION.finditer(text):
            seen += 1
            name, title = m.group(1), " ".join(re.sub(SPACE, " ", m.group(2)).split())
            target = ROOT / ("README.md" if name.startswith("README") else name)
            if not target.is_file():
                bad.append(f"{where(path, text, m.start())}: {name} does not exist")
                continue
            if target not in cache:
                found = headings(target)
                cache[target] = set(found) | {h.split(":", 1)[0].strip() for h in found}
            if title not in cache[target]:
                bad.append(f'{where(path, text, m.start())}: {name} "{title}" is no heading of {name}')
    assert seen, "no section citation found at all: the pattern is broken"
    assert not bad, ('citations of sections that do not exist (write the heading as it is, or the part of it '
                     'before a colon):\n  ' + "\n  ".join(bad))


# 4. docs/ARCHITECTURE.md lists the layers scripts/check-layers ranks.

def check_layers_order():
    text = (ROOT / "scripts" / "check-layers").read_text()
    block = re.search(r"^layers=\(\n(.*?)^\)", text, re.S | re.M)
    assert block, "scripts/check-layers has no `layers=(` array: update this test to read it"
    return [quoted.split() for quoted in re.findall(r'^\s*"([^"]+)"', block.group(1), re.M)]


def test_architecture_lists_the_layers_in_check_layers_order():
    ranked = check_layers_order()
    text = (DOCS / "ARCHITECTURE.md").read_text()
    section = re.search(r"^## The layers of Sources/DeviceID\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert section, 'docs/ARCHITECTURE.md has no section "## The layers of Sources/DeviceID"'
    items = re.findall(r"^(\d+)\.[ \t]+\*\*(.+?)\*\*", section.group(1), re.M)
    assert [int(n) for n, _ in items] == list(range(1, len(items) + 1)), \
        f"docs/ARCHITECTURE.md numbers its layers {[int(n) for n, _ in items]}: 1, 2, … bottom to top"
    listed = [re.split(r",\s*|\s+and\s+", names) for _, names in items]
    assert listed == ranked, ("docs/ARCHITECTURE.md lists the layers, bottom to top, as\n  "
                              + "\n  ".join(", ".join(layer) for layer in listed)
                              + "\nbut scripts/check-layers ranks them\n  "
                              + "\n  ".join(", ".join(layer) for layer in ranked))
    folders = sorted(p.name for p in (ROOT / "Sources" / "DeviceID").iterdir() if p.is_dir())
    layout = re.findall(r"^    ([A-Za-z]+)/", text, re.M)
    missing = [f for f in folders if f not in layout]
    assert not missing, f"docs/ARCHITECTURE.md's layout does not describe Sources/DeviceID/{missing}"


# 5. Every relative link of the README and docs/ resolves.

def test_every_relative_link_resolves():
    bad, seen = [], 0
    for page in [README] + sorted(DOCS.glob("*.md")):
        text = without_fences(page.read_text())
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # https:, mailto:
            seen += 1
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                bad.append(f"{where(page, text, m.start())}: ({target}): {path} does not exist")
            elif anchor and resolved.suffix == ".md" and anchor not in {slug(h) for h in headings(resolved)}:
                bad.append(f"{where(page, text, m.start())}: ({target}): no heading of {resolved.name} has "
                           f"the anchor #{anchor}")
    assert seen, "no relative link found at all: the pattern is broken"
    assert not bad, "links that lead nowhere:\n  " + "\n  ".join(bad)


# 6. docs/ENVIRONMENTS.md keeps what scripts/gen-man reads for deviceid(1).

def test_environments_md_has_what_gen_man_reads():
    gen_man = (ROOT / "scripts" / "gen-man").read_text()
    assert '(ROOT / "docs" / "ENVIRONMENTS.md")' in gen_man, \
        "scripts/gen-man no longer reads docs/ENVIRONMENTS.md: update this test with it"
    text = (DOCS / "ENVIRONMENTS.md").read_text()
    # The same expressions as scripts/gen-man's page1().
    for heading in ("### System services", "### Environment"):
        line = re.search("^" + re.escape(heading) + "$", text, re.M)
        assert line and text.index(heading) == line.start(), \
            f'docs/ENVIRONMENTS.md must have the heading "{heading}" (exactly, and before any other ' \
            "text starting so): scripts/gen-man builds deviceid(1) from it"
    services = text.split("### System services\n", 1)[1].split("\n### ", 1)[0].strip()
    assert "StateDirectory=" in services, \
        "deviceid(1)'s SYSTEM SERVICES (which store errors cite) would not explain StateDirectory="
    table = text.split("### Environment", 1)[1].split("\n\n", 2)[1]
    documented = {name for name, _ in re.findall(r"^\| `(\w+)` \| (.*) \|$", table, re.M)}
    read = set(re.findall(r'static let \w+ = "(DEVICEID_\w+)"',
                          (ROOT / "Sources" / "DeviceID" / "Support" / "Environment.swift").read_text()))
    assert read, "Sources/DeviceID/Support/Environment.swift names no variable: update this test"
    assert read <= documented, ("variables the library reads but deviceid(1)'s ENVIRONMENT (docs/ENVIRONMENTS.md, "
                                'the table right under "### Environment") does not list: '
                                f"{sorted(read - documented)}")


# 7. docs/TESTING.md lists the stages scripts/test runs, each stage passes on its arguments, and
#    the Swift test TESTING.md shows how to run alone exists.

STAGES = ROOT / "scripts" / "stages"


def test_testing_md_lists_every_stage_of_scripts_test():
    listed = subprocess.run([ROOT / "scripts" / "test", "--list"], capture_output=True, text=True, check=True)
    stages = listed.stdout.split()
    assert stages, "scripts/test --list names no stage"
    table = re.findall(r"^\| `([a-z0-9-]+)` \|", (DOCS / "TESTING.md").read_text(), re.M)
    assert table == stages, (f"docs/TESTING.md's stage table lists {table}; scripts/test --list names {stages} "
                             "(the same, in the same order)")
    files = sorted(p.name for p in STAGES.iterdir() if p.name != "common")
    assert files == sorted(stages), f"scripts/stages holds {files}, scripts/test --list names {sorted(stages)}"


def test_every_stage_passes_its_arguments_on():
    """scripts/test gives the last stage the arguments after --: each stage passes them to what
    it runs, or refuses them (no_arguments "$@" of scripts/stages/common); none drops them."""
    dropping = []
    for path in sorted(STAGES.iterdir()):
        if path.name == "common":
            continue
        code = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")]
        if not any('"$@"' in line for line in code):
            dropping.append(path.name)
    assert not dropping, (f"stages that drop the arguments scripts/test gives them: {dropping} "
                          '(pass "$@" to the stage\'s runner, or call no_arguments "$@")')


def test_testing_md_runs_one_swift_test_that_exists():
    text = (DOCS / "TESTING.md").read_text().replace("\n", " ")
    shown = re.search(r"`scripts/test swift -- --filter (\w+)\.(\w+)/(\w+)`", text)
    assert shown, "docs/TESTING.md no longer shows how to run one Swift test (scripts/test swift -- --filter T.C/m)"
    target, case, method = shown.groups()
    assert f'.testTarget(name: "{target}"' in (ROOT / "Package.swift").read_text(), f"no test target {target}"
    sources = "\n".join(p.read_text() for p in (ROOT / "Tests" / target).rglob("*.swift"))
    assert re.search(rf"\bclass {case}\b(.|\n)*?\bfunc {method}\(", sources), \
        f"docs/TESTING.md runs {target}.{case}/{method}, which Tests/{target} does not define"


# 8. Every function the headers declare is named as include/deviceid.h's conventions say.

HEADERS = [ROOT / "include" / "deviceid.h", ROOT / "include" / "deviceid-techniques.h"]


def naming_rule():
    """The conventions' naming rule, as include/deviceid.h writes it: (the bare verbs, the verbs
    that may lead a longer name, every verb)."""
    preamble = re.match(r"/\*(.*?)\*/", HEADERS[0].read_text(), re.S).group(1)
    rule = re.search(r"- names go from the object(.*?)(?=\n \* - )", preamble, re.S)
    assert rule, 'include/deviceid.h\'s conventions have no "- names go from the object…": update this test'
    text = re.sub(r"\s*\n \*\s*", " ", rule.group(1))
    bare = re.search(r"the bare verbs \(([a-z, ]+)\)", text)
    verbs = re.search(r"The verbs: ([a-z, ]+) \(", text)
    assert bare and verbs, f"the naming rule no longer lists its bare verbs and its verbs: {text}"
    leading = set(re.findall(r"\bdeviceid_([a-z]+)_[A-Z]+\b", text)) - {"OBJECT"}
    return set(bare.group(1).split(", ")), leading, set(verbs.group(1).split(", ")), text


def declared_functions():
    return sorted({m.group(1) for header in HEADERS
                   for m in re.finditer(r"^[a-z][^(\n]*?[ *](deviceid_\w+)\(", header.read_text(), re.M)})


def misnamed(names, bare, leading, verbs):
    """The names that follow no form of the rule: a verb before the last word (or alone, unless
    a bare verb), outside the families a verb leads."""
    bad = []
    for name in names:
        words = name.removeprefix("deviceid_").split("_")
        if len(words) == 1:
            if words[0] in verbs - bare:
                bad.append(f"{name}: {words[0]} is no bare verb")
        elif words[0] not in leading and verbs.intersection(words[:-1]):
            bad.append(f"{name}: the verb {sorted(verbs.intersection(words[:-1]))[0]} is not last")
    return bad


def test_every_declared_function_follows_the_naming_rule():
    bare, leading, verbs, text = naming_rule()
    names = declared_functions()
    assert len(names) > 40 and "deviceid_get" in names and "deviceid_uuid_parse" in names, names
    assert bare <= verbs and leading <= verbs, f"the bare and leading verbs are verbs of the list: {text}"
    bad = misnamed(names, bare, leading, verbs)
    assert not bad, "names that break include/deviceid.h's naming rule (the exported ones are fixed; a new one " \
        "follows the rule):\n  " + "\n  ".join(bad)
    words = {w for name in names for w in name.removeprefix("deviceid_").split("_")}
    assert verbs <= words, f"the rule lists verbs no name uses: {sorted(verbs - words)}"
    assert all(f"deviceid_{verb}" in names for verb in bare), f"a bare verb is no function: {sorted(bare)}"
    cited = set(re.findall(r"\b(deviceid_[a-z_]+)\(\)", text)) | set(re.findall(r"\b(deviceid_[a-z_]+)\)", text))
    assert cited and cited <= set(names), f"the rule cites functions that are not declared: {sorted(cited - set(names))}"


def test_the_naming_check_refuses_a_verb_first_name():
    bare, leading, verbs, _ = naming_rule()
    assert misnamed(["deviceid_store_secret", "deviceid_reset_identifier", "deviceid_lookup"], bare, leading, verbs) \
        == ["deviceid_store_secret: the verb store is not last",
            "deviceid_reset_identifier: the verb reset is not last",
            "deviceid_lookup: lookup is no bare verb"]


def schema_message_types():
    """Each wire message's type, as its schema (docs/schemas) owns it: the "type" property's one value."""
    import json

    types = {}
    for path in sorted((ROOT / "docs/schemas").glob("*.schema.json")):
        values = json.loads(path.read_text()).get("properties", {}).get("type", {}).get("enum", [])
        if len(values) == 1 and str(values[0]).startswith("deviceid."):
            types[path.name] = values[0]
    return types


def test_the_device_and_the_verifier_name_wire_messages_as_their_schemas_do():
    owned = set(schema_message_types().values())
    assert len(owned) >= 7, owned
    swift = dict(re.findall(r'case (\w+) = "(deviceid\.[a-z-]+)"',
                            (ROOT / "Sources/DeviceID/Hardware/WireMessage.swift").read_text()))
    python = dict(re.findall(r'^([A-Z_]+) = "(deviceid\.[a-z-]+)"$',
                             (ROOT / "server/deviceid_verifier/_wire.py").read_text(), re.M))
    assert swift and set(swift.values()) <= owned, f"Swift names messages no schema has: {set(swift.values()) - owned}"
    assert python and set(python.values()) <= owned, f"_wire.py names messages no schema has: {set(python.values()) - owned}"
    # Every message the device writes or reads is written once, in WireMessage.swift.
    for path in (ROOT / "Sources").rglob("*.swift"):
        if path.name == "WireMessage.swift":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.lstrip().startswith("///"):
                assert not re.search(r'"deviceid\.[a-z]+-?[a-z-]*"', line) or "deviceid.lock" in line or \
                    '"deviceid."' in line, f"{path.relative_to(ROOT)}:{number} names a wire message: use WireMessage"
