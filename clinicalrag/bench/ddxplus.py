"""DDXPlus patients rendered as English presentations.

A DDXPlus patient is an age, a sex, an initial evidence (the reason for consulting) and a list of evidence codes
(``E_91``: binary, present; ``E_54_@_V_179``: a category value; ``E_56_@_7``: a 0-10 scale value). The evidence
table (``release_evidences.json``) gives each code its English question, its type (B binary, C categorical, M
multi-choice), its value meanings and whether it is an antecedent (history, risk factor) or a symptom.

A question becomes a statement by a general rewrite ("Do you have a fever (...)?" -> "fever (...)", "Have you
ever had X?" -> "history of X", "Do you smoke cigarettes?" -> "smokes cigarettes", "your" -> "the") plus a table
of overrides for the questions the rule renders badly. Follow-up questions (pain character, location, radiation,
scales; skin lesion colour, size, location; swelling location) are folded into one phrase with their parent
("pain (sharp, burning) in the right flank, radiating to the back; intensity 7/10"). Default values (no pain
location, "NA", "N", scale 0) are left out.

The text reads: age and sex; the chief complaint (the initial evidence); the other symptoms, one sentence each;
then the history as one "History: ..." sentence.
"""
from __future__ import annotations

import ast
import csv
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .records import Case

# ------------------------------------------------------------------------------------------ evidence table
PAIN, SKIN, SWELLING = "E_53", "E_129", "E_151"


@dataclass(frozen=True)
class Evidence:
    code: str
    question: str
    data_type: str                      # "B" binary, "C" categorical (codes or a 0-10 scale), "M" multi-choice
    antecedent: bool
    parent: str | None                  # the question this one follows up (pain, skin lesions, swelling)
    default: str | None                 # the value that means "nothing to report"
    values: Mapping[str, str] = field(default_factory=dict)   # value code -> English meaning


def read_evidences(path: Path | str) -> dict[str, Evidence]:
    """The evidence table of ``release_evidences.json``. Raises ``ValueError`` on a malformed entry."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError("the evidence table is not a JSON object")
    table: dict[str, Evidence] = {}
    for code, e in raw.items():
        try:
            parent = e.get("code_question")
            values = {str(k): str(v.get("en", "")).strip() for k, v in (e.get("value_meaning") or {}).items()}
            table[code] = Evidence(code=code, question=str(e["question_en"]).strip(), data_type=str(e["data_type"]),
                                   antecedent=bool(e.get("is_antecedent")),
                                   parent=parent if parent and parent != code else None,
                                   default=None if e.get("default_value") is None else str(e["default_value"]),
                                   values=values)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"evidence {code}: malformed entry ({exc})") from None
    # a parent the table does not have (a few binary evidences name a retired code) is no parent
    return {c: e if e.parent is None or e.parent in table else _replace_parent(e) for c, e in table.items()}


def _replace_parent(e: Evidence) -> Evidence:
    return Evidence(e.code, e.question, e.data_type, e.antecedent, None, e.default, e.values)


# ------------------------------------------------------------------------------ question -> statement
# Statements for the questions the general rule renders badly (a second person left in, two questions in one,
# a typo, a past tense). Lower-case first letter, no final stop.
OVERRIDES: dict[str, str] = {
    "E_1": "currently or recently treated with an oral antibiotic for an ear infection",
    "E_4": "personal or family history of croup",
    "E_10": "currently or recently taking anti-inflammatory drugs (NSAIDs)",
    "E_20": "rheumatoid arthritis",
    "E_23": "episodes of stopping breathing during sleep",
    "E_31": "severe chronic obstructive pulmonary disease (COPD)",
    "E_33": "pain that improves when leaning forward",
    "E_40": "contact with someone who has had pertussis (whooping cough)",
    "E_42": "contact with, or ate, something they are allergic to",
    "E_49": "attends or works in a daycare",
    "E_53": "pain related to the reason for consulting",
    "E_66": "significant shortness of breath or difficulty breathing",
    "E_67": "bouts of choking or shortness of breath that wake them up at night",
    "E_70": "significantly overweight for their height",
    "E_71": "high cholesterol or on cholesterol-lowering medication",
    "E_73": "contact with someone infected with the Ebola virus in the last month",
    "E_75": "feeling of choking or suffocating",
    "E_78": "excessive alcohol use or alcohol addiction",
    "E_82": "lightheaded and dizzy, or feeling about to faint",
    "E_88": "so tired that they cannot do their usual activities, or stuck in bed all day",
    "E_89": "constant fatigue or non-restful sleep",
    "E_92": "cheeks suddenly turned red",
    "E_99": "personal or family history of migraine",
    "E_102": "consulting because of high blood pressure",
    "E_104": "high blood pressure or on blood pressure medication",
    "E_105": "history of heart attack, or angina (chest pain)",
    "E_111": "feeling of dying, or afraid of being about to die",
    "E_112": "wheezing on inhaling, or noisy breathing after coughing spells",
    "E_114": "more irritable, or very unstable mood recently",
    "E_124": "asthma, or has used a bronchodilator in the past",
    "E_127": "excessive tearing of the eyes",
    "E_128": "brief episodes of suffocation with inability to breathe or speak",
    "E_129": "skin lesions, redness or other skin problems related to the condition",
    "E_141": "first menstrual period before the age of 12",
    "E_142": "mother has asthma",
    "E_146": "taking a new oral anticoagulant (NOAC)",
    "E_148": "nausea or urge to vomit",
    "E_149": "takes a calcium channel blocker",
    "E_150": "still able to pass stools or gas since the symptoms increased",
    "E_155": "heart beating fast (racing) or irregularly (missing a beat), or palpitations",
    "E_159": "loss of consciousness",
    "E_160": "born prematurely or had complications at birth",
    "E_161": "recent loss of appetite, or gets full more quickly than usual",
    "E_164": "heart beating very irregularly or in a disorganized pattern",
    "E_166": "vomiting after coughing",
    "E_167": "pregnant or possibly pregnant",
    "E_169": "itchy nose or back of the throat",
    "E_171": "feeling detached from their own body or surroundings",
    "E_174": "unintentional weight loss or loss of appetite",
    "E_176": "weakness or paralysis in one or more limbs or in the face, now or in the past",
    "E_177": "numbness, loss of sensation or tingling anywhere on the body, now or in the past",
    "E_187": "ate dark-fleshed fish (such as tuna) or Swiss cheese before the reaction",
    "E_190": "producing more saliva than usual",
    "E_192": "muscle spasms or soreness in the neck preventing turning the head to one side",
    "E_205": "sudden difficulty or inability to open the mouth, or jaw pain on opening it",
    "E_208": "BMI below 18.5 (underweight)",
    "E_210": "recently vomited blood or material resembling coffee grounds",
    "E_211": "repeated vomiting or retching",
    "E_214": "wheezing on exhaling",
    "E_220": "pain increased by breathing in deeply",
    "E_225": "family history of cardiovascular disease before the age of 50",
}

# (question pattern, statement template): the first pattern that matches wins; "{}" is the rest of the question
# (group 1), without its leading article unless the template is marked to keep it. Questions that match none are
# used as they are.
_ADVERB = r"(?:currently |constantly |suddenly |regularly |ever )?"
_KEEP_ARTICLE = "\x00"
_RULES: list[tuple[re.Pattern[str], str]] = [(re.compile(p, re.IGNORECASE), t) for p, t in [
    (r"^.*\bfamil(?:y|ies)\b.*\b(?:diagnosed with|diagnosed|suffer from|had|have) (.+)$", "family history of {}"),
    (r"^have you ever been diagnosed with (.+)$", "history of {}"),
    (r"^(?:have you been|were you) diagnosed with (.+)$", "known {}"),
    (r"^have you ever had (?:a diagnosis of )?(.+)$", "history of {}"),
    (r"^have you recently had (.+)$", "recent {}"),
    (r"^have you been in contact with (.+)$", _KEEP_ARTICLE + "contact with {}"),
    (r"^have you (?:had|noticed|been) (?:that )?(.+)$", "{}"),
    (r"^have you (.+)$", "{}"),
    (rf"^do you {_ADVERB}(?:have|suffer from) (.+)$", "{}"),
    (r"^does the person have (.+)$", "{}"),
    (r"^do (?:your|the) (.+)$", "{}"),
    (r"^are you (.+)$", "{}"),
    (r"^(?:is|are) (?:your|the) (.+)$", "{}"),
    (rf"^do you ({_ADVERB}\w+\b.*)$", "{verb}"),
]]
_LEADING_ARTICLE = re.compile(r"^(?:a|an|any)\s+", re.IGNORECASE)
_VERB = re.compile(rf"^({_ADVERB})(\w+)(.*)$", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_PHRASES = [(re.compile(p, re.IGNORECASE), r) for p, r in [
    (r"\brelated to (?:your|the) consultation today\b", "related to the current complaint"),
    (r"\byour\b", "the"),
    (r"\bor have (?:a|an) ", "or a "),
    (r"\b(\w+) \1\b", r"\1"),                      # "in in"
]]


def _third_person(rest: str) -> str:
    """ "regularly drink coffee" -> "regularly drinks coffee"; "undergo dialysis" -> "undergoes dialysis"."""
    m = _VERB.match(rest)
    adverb, verb, tail = m.groups()
    verb = verb + ("es" if re.search(r"(?:s|sh|ch|x|z|o)$", verb) else "s")
    return f"{adverb}{verb}{tail}"


def statement(ev: Evidence) -> str:
    """The evidence as a statement: no final punctuation, lower-case first letter unless the question's own
    wording keeps a capital there (a name, an acronym)."""
    if ev.code in OVERRIDES:
        return OVERRIDES[ev.code]
    q = _SPACES.sub(" ", ev.question.replace("\u2019", "'")).strip().rstrip("?:. ")
    for pattern, template in _RULES:
        m = pattern.match(q)
        if m:
            rest = m.group(1)
            if template.startswith(_KEEP_ARTICLE):
                template = template[1:]
            else:
                rest = _LEADING_ARTICLE.sub("", rest)
            q = _third_person(rest) if template == "{verb}" else template.format(rest)
            break
    else:
        q = _lower_first(q)
    for pattern, repl in _PHRASES:
        q = pattern.sub(repl, q)
    return q


def _lower_first(s: str) -> str:
    if len(s) > 1 and s[:2].isupper():        # "HIV ...", "COPD ..."
        return s
    return s[:1].lower() + s[1:]


def _upper_first(s: str) -> str:
    return s[:1].upper() + s[1:]


# --------------------------------------------------------------------------------------- value phrases
# Value meanings as the release translates them, where the translation misleads (pain character, places).
PAIN_CHARACTER = {
    "heartbreaking": "tearing", "haunting": "lancinating", "tedious": "nagging", "sensitive": "tender",
    "a knife stroke": "stabbing", "tugging": "pulling", "a cramp": "cramping", "a pulse": "pulsating",
    "scary": "frightening",
}
PLACES = {
    "finger (index)": "{side}index finger", "finger (middle)": "{side}middle finger",
    "finger (ring finger)": "{side}ring finger", "finger (little finger)": "{side}little finger",
    "toe (1)": "{side}second toe", "toe (2)": "{side}third toe", "toe (3)": "{side}fourth toe",
    "little toe (4)": "{side}little toe", "ischio jambier": "{side}hamstring", "palace": "palate",
    "commissure": "{side}corner of the mouth", "epigastric": "epigastrium", "belly": "abdomen",
    "glans": "glans penis", "vermilion": "{side}vermilion border of the lip",
    "internal cheek": "inside of the {side}cheek", "bottom lip": "{side}lower lip",
    "above the tongue": "top of the tongue", "under the tongue": "underside of the tongue",
    "under the jaw": "area under the jaw", "back of head": "back of the head",
    "dorsal aspect of the hand": "back of the {side}hand", "dorsal aspect of the foot": "top of the {side}foot",
    "dorsal aspect of the wrist": "back of the {side}wrist",
    "palmar face of the wrist": "palmar side of the {side}wrist",
    "palmar side of the forearm": "palmar side of the {side}forearm",
    "lateral side of the foot": "outer side of the {side}foot",
    "posterior aspect of the ankle": "back of the {side}ankle", "side of the neck": "{side}side of the neck",
    "side of the chest": "{side}side of the chest", "posterior chest wall": "{side}posterior chest wall",
    "labia majora": "{side}labium majus", "labia minora": "{side}labium minus", "renal fossa": "{side}renal angle",
}
REGIONS = {"Caraibes": "the Caribbean"}
_SIDE = re.compile(r"^(.*?)\s*\((R|L)\)$")
_NOTHING = {"nowhere", "na", "n", ""}


def _place_parts(meaning: str) -> tuple[str, str]:
    """ "tonsil(R)" -> ("{side}tonsil", "right "); "finger (index)(L)" -> ("{side}index finger", "left ")."""
    m = _SIDE.match(meaning.strip())
    base, side = (m.group(1), {"R": "right ", "L": "left "}[m.group(2)]) if m else (meaning.strip(), "")
    text = PLACES.get(base, "{side}" + base)
    if "{side}" not in text and side:
        text = "{side}" + text
    return text, side


def places(meanings: Iterable[str]) -> list[str]:
    """Places in order of first mention, a right and left pair said once ("the right and left tonsil")."""
    sides: dict[str, list[str]] = {}
    for meaning in meanings:
        text, side = _place_parts(meaning)
        if side not in sides.setdefault(text, []):
            sides[text].append(side)
    out = []
    for text, found in sides.items():
        side = "right and left " if {"right ", "left "} <= set(found) else found[0]
        out.append("the " + text.format(side=side))
    return out


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -------------------------------------------------------------------------------------------- patients
@dataclass
class _Finding:
    code: str
    values: list[str] = field(default_factory=list)


def parse_features(features: Iterable[str]) -> list[tuple[str, str | None]]:
    """``["E_53", "E_54_@_V_179", "E_56_@_7"]`` -> ``[("E_53", None), ("E_54", "V_179"), ("E_56", "7")]``."""
    out = []
    for f in features:
        code, sep, value = str(f).partition("_@_")
        out.append((code.strip(), value.strip() if sep else None))
    return out


class Renderer:
    """Renders DDXPlus patients with one evidence table."""

    def __init__(self, evidences: Mapping[str, Evidence]) -> None:
        self.ev = dict(evidences)

    # ---------------------------------------------------------------- values
    def _meaningful(self, code: str, values: list[str]) -> list[str]:
        """The values worth saying: defaults, "nowhere", "NA" and "N" left out."""
        ev = self.ev.get(code)
        if ev is None or not values:
            return []
        out = []
        for v in values:
            if v == ev.default or ev.values.get(v, v).strip().lower() in _NOTHING:
                continue
            out.append(v)
        return out

    def _scale(self, code: str, values: list[str]) -> str | None:
        vals = self._meaningful(code, values)
        return f"{vals[-1]}/10" if vals else None

    def _meanings(self, code: str, values: list[str]) -> list[str]:
        return [self.ev[code].values.get(v, v) for v in self._meaningful(code, values)]

    # ---------------------------------------------------------------- groups
    def _pain(self, f: dict[str, _Finding]) -> str:
        v = {c: x.values for c, x in f.items()}
        head = "pain"
        character = [PAIN_CHARACTER.get(m, m) for m in self._meanings("E_54", v.get("E_54", []))]
        if character:
            head += f" ({', '.join(character)})"
        sites = places(self._meanings("E_55", v.get("E_55", [])))
        if sites:
            head += " in " + _join(sites)
        radiating = places(self._meanings("E_57", v.get("E_57", [])))
        if radiating:
            head += (", " if sites else " ") + "radiating to " + _join(radiating)
        scales = [(label, self._scale(code, v.get(code, [])))
                  for code, label in (("E_56", "intensity"), ("E_58", "localisation precision"),
                                      ("E_59", "speed of onset"))]
        scales_text = ", ".join(f"{label} {s}" for label, s in scales if s)
        return head + ("; " + scales_text if scales_text else "")

    def _skin(self, f: dict[str, _Finding]) -> str:
        v = {c: x.values for c, x in f.items()}
        traits = self._meanings("E_130", v.get("E_130", []))
        if self._meaningful("E_131", v.get("E_131", [])):
            traits.append("peeling")
        if self._meaningful("E_135", v.get("E_135", [])):
            traits.append("larger than 1 cm")
        sites = places(self._meanings("E_133", v.get("E_133", [])))
        scales = [(label, self._scale(code, v.get(code, [])))
                  for code, label in (("E_132", "swelling"), ("E_134", "pain"), ("E_136", "itching"))]
        scales_text = ", ".join(f"{label} {s}" for label, s in scales if s)
        if not (traits or sites or scales_text):
            return statement(self.ev[SKIN])
        head = "skin lesions" + (f" ({', '.join(traits)})" if traits else "")
        if sites:
            head += " on " + _join(sites)
        return head + ("; " + scales_text if scales_text else "")

    def _swelling(self, f: dict[str, _Finding]) -> str:
        sites = places(self._meanings("E_152", f["E_152"].values)) if "E_152" in f else []
        return "swelling of " + _join(sites) if sites else statement(self.ev[SWELLING])

    def _generic(self, code: str, f: dict[str, _Finding]) -> str | None:
        """A standalone evidence (binary, or a category question such as travel) plus any follow-ups."""
        parts = []
        if code in f:
            ev = self.ev[code]
            if ev.data_type == "B":
                parts.append(statement(ev))
            else:
                meanings = [REGIONS.get(m, m) for m in self._meanings(code, f[code].values)]
                if meanings:
                    parts.append(f"{statement(ev)}: {_join(meanings)}")
        for child, finding in f.items():
            if child == code:
                continue
            meanings = self._meanings(child, finding.values)
            if meanings:
                parts.append(f"{statement(self.ev[child])}: {_join(meanings)}")
        return "; ".join(parts) or None

    def _group_phrase(self, code: str, f: dict[str, _Finding]) -> str | None:
        if code == PAIN:
            return self._pain(f)
        if code == SKIN:
            return self._skin(f)
        if code == SWELLING:
            return self._swelling(f)
        return self._generic(code, f)

    # ---------------------------------------------------------------- patient
    def render(self, age: int, sex: str, initial: str, features: Iterable[str]) -> str:
        """The presentation of one patient. Raises ``ValueError`` naming an unknown evidence code."""
        groups: dict[str, dict[str, _Finding]] = {}
        for code, value in parse_features(features):
            if code not in self.ev:
                raise ValueError(f"unknown evidence code {code!r}")
            head = self.ev[code].parent or code
            finding = groups.setdefault(head, {}).setdefault(code, _Finding(code))
            if value is not None:
                finding.values.append(value)
        if initial not in self.ev:
            raise ValueError(f"unknown initial evidence {initial!r}")
        initial = self.ev[initial].parent or initial
        groups.setdefault(initial, {})       # the reason for consulting is a finding even if not repeated

        symptoms, history = [], []
        chief = self._group_phrase(initial, groups[initial] or {initial: _Finding(initial)})
        for head, f in groups.items():
            if head == initial:
                continue
            phrase = self._group_phrase(head, f)
            if phrase:
                (history if self.ev[head].antecedent else symptoms).append(phrase)
        lines = [demographics(age, sex) + (f" Chief complaint: {chief}." if chief else "")]
        if symptoms:
            lines.append(" ".join(_upper_first(s) + "." for s in symptoms))
        if history:
            lines.append("History: " + "; ".join(history) + ".")
        return "\n".join(lines)


def demographics(age: int, sex: str) -> str:
    """ "A 31-year-old man." / "An 8-year-old girl." / "A baby boy under 1 year old." """
    male = str(sex).strip().upper().startswith("M")
    if age < 1:
        return f"A baby {'boy' if male else 'girl'} under 1 year old."
    noun = ("man" if male else "woman") if age >= 18 else ("boy" if male else "girl")
    article = "An" if age in (11, 18) or str(age).startswith("8") else "A"
    return f"{article} {age}-year-old {noun}."


# ------------------------------------------------------------------------------------------ the dataset
def read_patients(path: Path | str, evidences: Mapping[str, Evidence]) -> list[Case]:
    """The DDXPlus test patients as :class:`Case` s (``ddxplus-<row index>``). Raises ``ValueError`` naming the
    row on a malformed one."""
    renderer = Renderer(evidences)
    cases: list[Case] = []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        needed = {"age", "sex", "diagnosis", "features", "feature_id", "top5_diagnoses"}
        missing = needed - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"missing column(s) {sorted(missing)}")
        for i, row in enumerate(reader):
            try:
                age = int(row["age"])
                features = ast.literal_eval(row["features"])
                differential = [str(d[0]) for d in ast.literal_eval(row["top5_diagnoses"] or "[]")]
                label = row["diagnosis"].strip()
                if not label:
                    raise ValueError("empty diagnosis")
                text = renderer.render(age, row["sex"], row["feature_id"].strip(), features)
            except (ValueError, SyntaxError, TypeError, IndexError) as exc:
                raise ValueError(f"row {i} (line {reader.line_num}): {exc}") from None
            meta = {"age": age, "sex": row["sex"].strip(), "initial_evidence": row["feature_id"].strip(), "row": i}
            cases.append(Case(id=f"ddxplus-{i}", text=text, label=label, differential=tuple(differential), meta=meta))
    return cases
