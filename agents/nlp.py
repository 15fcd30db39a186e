"""spaCy pipeline construction for the MEE agent.

No scispaCy model is published on PyPI, so the default pipeline is assembled from parts:

- ``spacy.blank("en")`` with scispaCy's biomedical tokenizer (``combined_rule_tokenizer``),
- a token-norm component (:func:`knowledge.text.fold`: lower case + light plural folding) used by the
  vocabulary phrase matcher,
- a rule-based sentencizer (``sentencizer``; ``sentences="pyrush"`` uses medspaCy's PyRuSH splitter),
- medspaCy's ``medspacy_context`` (negation, history, family, hypothetical) and ``medspacy_sectionizer``.

A user who installed a scispaCy model (``en_core_sci_sm`` / ``en_core_sci_md``) can pass its name; it is loaded
with its own tokenizer and parser and the same medspaCy components are added after it.
"""
from __future__ import annotations

import os
import sys
import types
from contextlib import contextmanager


@contextmanager
def _lean_imports():
    """Import spaCy and medspaCy without two optional dependencies this pipeline never uses: thinc imports PyTorch
    when it is installed (about 1 s), and medspaCy imports QuickUMLS -> NLTK -> SciPy (about 1.5 s) for a
    component we do not add. Both are hidden only while the modules load (PyTorch stays importable afterwards);
    ``CLINICALRAG_LEAN_IMPORTS=0`` turns this off."""
    if os.environ.get("CLINICALRAG_LEAN_IMPORTS", "1") == "0" or "spacy" in sys.modules:
        yield
        return

    class _HideTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError(f"{name} hidden while spaCy loads", name=name)
            return None

    finder = None if "torch" in sys.modules else _HideTorch()
    stubbed = []
    if "quickumls" not in sys.modules:
        stub = types.ModuleType("quickumls")
        stub.spacy_component = types.ModuleType("quickumls.spacy_component")
        sys.modules["quickumls"] = stub
        sys.modules["quickumls.spacy_component"] = stub.spacy_component
        stubbed = ["quickumls", "quickumls.spacy_component"]
    if finder is not None:
        sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        if finder is not None:
            sys.meta_path.remove(finder)
        for name in stubbed:
            sys.modules.pop(name, None)


with _lean_imports():
    import spacy
    import medspacy  # noqa: F401  (registers the medspacy_* factories)
    from spacy.language import Language
    from spacy.tokens import Doc

from knowledge.text import fold

from .textutil import CLAUSE_VERBS

NORM_COMPONENT = "mee_norms"


@Language.component(NORM_COMPONENT)
def _set_norms(doc: Doc) -> Doc:
    for tok in doc:
        tok.norm_ = fold(tok.text)
    return doc


# Context cues added to medspaCy's default ConText rules (the defaults already hold "no", "denies", ...).
EXTRA_CONTEXT_RULES: list[tuple[str, str]] = [
    ("denies", "NEGATED_EXISTENCE"),
    ("denied", "NEGATED_EXISTENCE"),
    ("denying", "NEGATED_EXISTENCE"),
    ("negative for", "NEGATED_EXISTENCE"),
    ("free of", "NEGATED_EXISTENCE"),
    ("without", "NEGATED_EXISTENCE"),
    ("no evidence of", "NEGATED_EXISTENCE"),
    ("absence of", "NEGATED_EXISTENCE"),
    ("resolved", "HISTORICAL"),
    ("history of", "HISTORICAL"),
    ("hx of", "HISTORICAL"),
    ("in the past", "HISTORICAL"),
    ("previously had", "HISTORICAL"),
    ("mother", "FAMILY"),
    ("father", "FAMILY"),
    ("sister", "FAMILY"),
    ("brother", "FAMILY"),
    ("grandmother", "FAMILY"),
    ("grandfather", "FAMILY"),
    ("family history of", "FAMILY"),
    ("rule out", "HYPOTHETICAL"),
    ("r/o", "HYPOTHETICAL"),
    ("concern for", "HYPOTHETICAL"),
    ("if", "HYPOTHETICAL"),
]

# Phrases saying a complaint persists; they hold a negation word but deny nothing.
PERSISTENCE_PHRASES: tuple[str, ...] = (
    "won't go away", "will not go away", "wont go away", "doesn't go away", "does not go away",
    "not going away", "won't stop", "will not stop", "doesn't stop", "does not stop", "can't get rid of",
    "cannot get rid of", "can't seem to get rid of", "can't shake", "won't settle", "doesn't get better",
    "does not get better", "not getting better", "won't quit", "no matter what",
    "can't stop", "cannot stop", "can not stop", "couldn't stop", "could not stop", "can't seem to stop",
    "can't quit", "can't seem to shake", "cannot shake", "can't seem to get over", "can't get over",
    # a treatment that has not worked: "anaemia that has not responded to tablets and an itchy rash" denies no rash
    "not responded", "hasn't responded", "haven't responded", "didn't respond", "not respond", "not improved",
    "hasn't improved", "didn't improve", "not improve", "not helped", "hasn't helped", "didn't help", "not help",
)

# Phrases saying the patient cannot do something: an inability is a complaint ("not able to breathe properly"), not
# a denial of the findings after it ("i am not able to brethe propelry, lying on bed due to high fever").
INABILITY_PHRASES: tuple[str, ...] = (
    "not able to", "unable to", "isn't able to", "wasn't able to", "aren't able to", "weren't able to",
    "not been able to", "haven't been able to", "hasn't been able to", "hadn't been able to", "can't", "cannot",
    "can not", "couldn't", "could not",
)

# ... except an inability to remember, which leaves the finding unreported: "she cannot recall any trauma".
UNRECALLED_PHRASES: tuple[str, ...] = (
    "can't recall", "cannot recall", "can not recall", "couldn't recall", "could not recall", "can't remember",
    "cannot remember", "couldn't remember", "could not remember",
)

# Where a new clause with its own subject begins, a negation's scope ends: "I'm not feeling good, and I'm sweating a
# lot", "I just don't have any energy and my throat is itchy", "even when I don't eat, I have a sour taste"; and so
# it does at a cause: "stiff without moving, due to my swollen joints". A list keeps its negation ("no fever, chills
# or cough"): only a conjunction or comma followed by a subject word ends it.
CLAUSE_JOINERS: tuple[str, ...] = (",", "and", "but", "so", "because", "while", "although", "though")
CLAUSE_SUBJECTS: tuple[str, ...] = ("i", "my", "he", "she", "his", "her", "they", "their", "we", "our")
SUBJECT_PRONOUNS: tuple[str, ...] = ("i", "he", "she", "they", "we")
# verbs whose subject is the patient in a presentation ("a man whose friend has the flu presents with fever")
PATIENT_VERBS: tuple[str, ...] = ("presents", "presented", "complains", "complained")
CAUSE_PHRASES: tuple[str, ...] = ("due to", "because of", "thanks to", "owing to")
# ... and so it does where the patient's own verb follows a joiner with the subject left out (textutil.CLAUSE_VERBS; a
# denial of its own after the verb starts a new scope: "and has not vomited"); these clause ends close a past
# history's scope too ("she had pneumonia in the past and has a cough": the cough is today's)
# ... and so it does where an exception begins: "no abnormalities other than crepitus in both knees", "unremarkable
# except for a palpable purpura" (what follows is present)
EXCEPTION_PHRASES: tuple[str, ...] = ("other than", "except for", "except", "apart from", "aside from",
                                     "with the exception of", "save for")
# ... and where a comma opens what came before: "a band of blisters that does not cross the midline, after three days
# of burning pain there" (the pain is present); without the comma the time belongs to the denial ("no pain after
# meals")
EARLIER_PHRASES: tuple[str, ...] = ("after", "following")

# Test names that hold a cue word: "free T4 is high" denies nothing ("free" is a negation cue in "pain-free").
TEST_NAME_PHRASES: tuple[str, ...] = (
    "free T4", "free T3", "free thyroxine", "free triiodothyronine", "free testosterone", "free cortisol",
    "free light chains", "free light chain", "free fatty acids", "free air", "free fluid", "free water",
)

# A relative who brings the patient or tells the story is the informant, not the one with the finding: "brought to
# the physician by his mother", "the mother reports that her son has become withdrawn", "according to her father".
INFORMANT_RELATIVES: tuple[str, ...] = ("mother", "father", "parents", "parent", "sister", "brother", "grandmother",
                                        "grandfather")
INFORMANT_VERBS: tuple[str, ...] = ("reports", "reported", "says", "said", "states", "stated", "notes", "noted",
                                    "describes", "described", "explains", "explained", "adds", "added", "brought",
                                    "brings", "noticed", "observed", "thinks", "believes", "worries")

# Someone who is neither the patient nor a relative (medspaCy's family cues hold the relatives, "partner" and
# "spouse"): "her boyfriend has HIV", "a coworker who was diagnosed with tuberculosis", "his roommate had the flu".
# The cue needs the person's own verb after it, so "went hiking with friends and has a rash" stays the patient's.
OTHER_PERSONS: tuple[str, ...] = (
    "boyfriend", "boyfriends", "girlfriend", "girlfriends", "fiance", "fiancee", "fiancé", "fiancée", "partners",
    "husbands", "wives", "spouses", "coworker", "coworkers", "co-worker", "co-workers", "colleague", "colleagues",
    "roommate", "roommates", "housemate", "housemates", "flatmate", "flatmates", "classmate", "classmates",
    "schoolmate", "schoolmates", "teammate", "teammates", "cellmate", "cellmates", "friend", "friends", "neighbor",
    "neighbors", "neighbour", "neighbours", "boss", "employer", "tenant", "landlord",
)   # (not a caregiver or a babysitter: they bring the patient and tell the story)
# The patient as the first of a joint subject ("a woman and her husband both ..."), and the people beside them: the
# relatives and the other persons above, and the close family they leave out.
PATIENT_NOUNS: tuple[str, ...] = ("i", "he", "she", "man", "woman", "boy", "girl", "patient", "child", "baby",
                                  "infant", "toddler", "teenager", "student", "gentleman", "lady")
HOUSEHOLD: tuple[str, ...] = INFORMANT_RELATIVES + OTHER_PERSONS + (
    "husband", "wife", "partner", "spouse", "son", "daughter", "sons", "daughters", "children", "kids", "child",
    "baby", "brothers", "sisters", "family", "twin")
OTHER_PERSON_VERBS: tuple[str, ...] = (
    "has", "had", "have", "is", "was", "were", "are", "with", "got", "caught", "developed", "recently", "also",
    "just", "tested", "diagnosed", "died", "came", "returned", "suffers", "suffered",
)
# "a man whose friend has the flu has fever": the patient's own verb after the other person's relative clause ends
# that person's scope (the finding after it is the patient's; "the flu" before it stays the friend's)
MAIN_CLAUSE_VERBS: tuple[str, ...] = (
    "has", "had", "have", "is", "was", "presents", "presented", "complains", "complained", "reports", "reported",
    "developed", "feels", "felt", "notes", "noted", "describes", "described", "comes", "came", "experiences",
    "experienced",
)
# an adverb of time between a joiner and the patient's pronoun still starts the patient's clause: "my friend has the
# flu and now I have a fever", "..., but since yesterday she has a cough"
CLAUSE_ADVERBS: tuple[str, ...] = ("now", "then", "today", "yesterday", "recently", "lately", "since", "also",
                                   "later", "tonight", "this", "morning", "week")
# the other person's own verb right after a cue that leaves it out ("whose mother had ..."), skipped before looking for
# the patient's
_PERSONS_OWN_VERBS = frozenset(OTHER_PERSON_VERBS) | frozenset(MAIN_CLAUSE_VERBS) | {"been", "who"}
_MAIN_CLAUSE_VERBS = frozenset(MAIN_CLAUSE_VERBS)

# Section headers frequent in short clinical presentations (added to medspaCy's default section rules, which
# already hold "History:", "Past medical history:", "PMH:", "Family history:", "Social history:", ...). Past-history
# sections flag their entities as historical (agents.mee.sections bounds how far a header reaches).
EXTRA_SECTION_RULES: list[tuple[str, str]] = [
    ("CC:", "chief_complaint"),
    ("HPI:", "history_of_present_illness"),
    ("PMH:", "past_medical_history"),
    ("PMHx:", "past_medical_history"),
    ("Past history:", "past_medical_history"),
    ("Medical history:", "past_medical_history"),
    ("Past medical and surgical history:", "past_medical_history"),
    ("Previous history:", "past_medical_history"),
    ("Prior history:", "past_medical_history"),
    ("Medical background:", "past_medical_history"),
    ("Comorbidities:", "past_medical_history"),
    ("Risk factors:", "past_medical_history"),
    ("Hx:", "past_medical_history"),
    ("PSH:", "past_medical_history"),
    ("PSHx:", "past_medical_history"),
    ("FH:", "family_history"),
    ("FHx:", "family_history"),
    ("Family history:", "family_history"),
    ("SH:", "sexual_and_social_history"),
    ("Meds:", "medications"),
    ("Medications:", "medications"),
    ("Allergies:", "allergies"),
    ("ROS:", "review_of_systems"),
    ("Exam:", "observation_and_plan"),
]


_COUNT_WORD = r"^(?:\d+(?:\.\d+)?|few|couple|several|one|two|three|four|five|six|seven|eight|nine|ten|twelve)$"


def is_model_name(pipeline: str) -> bool:
    return pipeline not in ("blank", "", None)


def _not_past_whose_clause(target, modifier, between) -> bool:
    """Whether another person's cue reaches ``target``: not when the cue opens a relative clause ("whose friend has
    the flu") and a main-clause verb stands between the cue and the target ("... has fever": the patient's)."""
    doc = modifier.doc
    if modifier.start == 0 or doc[modifier.start - 1].lower_ != "whose" or target.start < modifier.end:
        return True
    words = [t.lower_ for t in doc[modifier.end:target.start]]
    first = 0
    while first < len(words) and words[first] in _PERSONS_OWN_VERBS:   # "whose mother had ...": her verb, not his
        first += 1
    return not any(w in _MAIN_CLAUSE_VERBS for w in words[first:])


def build_pipeline(pipeline: str = "blank", *, sentences: str = "rules") -> Language:
    """Build the spaCy pipeline used by MEE (see module docstring).

    ``pipeline``: ``"blank"`` (default) or the name of an installed spaCy/scispaCy model package.
    ``sentences``: ``"rules"`` (spaCy sentencizer) or ``"pyrush"`` (medspaCy PyRuSH); ignored with a model that
    has a parser.
    """
    import medspacy  # noqa: F401,PLC0415  (registers the medspacy_* factories)
    from medspacy.context import ConTextRule  # noqa: PLC0415
    from medspacy.section_detection import SectionRule  # noqa: PLC0415

    if is_model_name(pipeline):
        try:
            nlp = spacy.load(pipeline, exclude=["ner"])
        except OSError as exc:
            raise ValueError(
                f"spaCy pipeline {pipeline!r} is not installed; use pipeline='blank' or install the model package"
            ) from exc
    else:
        from scispacy.custom_tokenizer import combined_rule_tokenizer  # noqa: PLC0415

        nlp = spacy.blank("en")
        nlp.tokenizer = combined_rule_tokenizer(nlp)
    nlp.add_pipe(NORM_COMPONENT, first=True)
    if not (nlp.has_pipe("parser") or nlp.has_pipe("senter") or nlp.has_pipe("sentencizer")):
        if sentences == "pyrush":
            nlp.add_pipe("medspacy_pyrush")
        else:
            nlp.add_pipe("sentencizer", config={"punct_chars": [".", "!", "?", ";", "\n"]})
    # A modifier of another kind ends a negation's scope: "no fever, mother has asthma" -> asthma is not negated.
    terminating = {
        "NEGATED_EXISTENCE": ["FAMILY", "HISTORICAL", "HYPOTHETICAL", "POSITIVE_EXISTENCE", "CLAUSE_END",
                              "NEW_SUBJECT"],
        "FAMILY": ["NEGATED_EXISTENCE", "NEW_SUBJECT"],
        "HYPOTHETICAL": ["NEGATED_EXISTENCE", "FAMILY"],
        # a past history ends where the patient's present begins: "she had asthma in the past and has eczema"
        "HISTORICAL": ["CLAUSE_END", "NEW_SUBJECT"],
    }
    context = nlp.add_pipe("medspacy_context", config={"rules": "default", "span_attrs": "default"})
    # (set after construction: spaCy's config validation turns the lists into one-shot iterators)
    context.terminating_types = {k: list(v) for k, v in terminating.items()}
    # a cue inside a finding is part of the finding ("no energy", "can't fall asleep", "lacking in energy"): it
    # neither negates the finding itself nor what follows it
    context.prune_on_target_overlap = True
    for rule in context.rules:
        rule.terminated_by.update(terminating.get(rule.category.upper(), ()))
    context.add([ConTextRule(lit, cat, direction=_direction(cat, lit)) for lit, cat in EXTRA_CONTEXT_RULES])
    # "a 3-day history of cough" describes the present illness, not past history: a longer PSEUDO match wins
    # over the single-word "history" cue.
    span_word = r"^(?:\d+(?:\.\d+)?-)?(?:hours?|days?|weeks?|months?|years?|hrs?|wks?|mos?|yrs?)$"
    context.add([
        ConTextRule("<n>-day history of", "PSEUDO", direction="PSEUDO", pattern=[
            {"LIKE_NUM": True, "OP": "?"}, {"TEXT": "-", "OP": "?"},
            {"LOWER": {"REGEX": span_word}}, {"LOWER": {"IN": ["history", "hx"]}}, {"LOWER": "of", "OP": "?"}]),
        # "in the past week", "over the last 3 days": the present illness, not the "in the past" cue
        ConTextRule("in the past <span>", "PSEUDO", direction="PSEUDO", pattern=[
            {"LOWER": {"IN": ["in", "over", "for", "during", "within"]}}, {"LOWER": "the"},
            {"LOWER": {"IN": ["past", "last"]}}, {"LOWER": {"REGEX": _COUNT_WORD}, "OP": "?"},
            {"LOWER": {"REGEX": span_word}}]),
        # "she had asthma in the past.": the cue closing its clause looks back over the few words before it only
        # ("a cough today and asthma in the past": the cough is today's); "in the past I had ..." looks forward
        ConTextRule("<finding> in the past", "HISTORICAL", direction="BACKWARD", max_scope=3, pattern=[
            {"LOWER": "in"}, {"LOWER": "the"}, {"LOWER": "past"}, {"IS_PUNCT": True}]),
        ConTextRule("history of present illness", "PSEUDO", direction="PSEUDO", pattern=[
            {"LOWER": {"IN": ["history", "hx"]}}, {"LOWER": "of"}, {"LOWER": {"IN": ["present", "presenting"]}},
            {"LOWER": "illness"}]),
    ])
    # the informant: "by his mother", "his mother reports", "according to her father" (a longer PSEUDO match wins
    # over the single-word family cue; "his mother has asthma" stays family history)
    owner = {"LOWER": {"IN": ["his", "her", "their", "the", "a", "my"]}, "OP": "?"}
    relative = {"LOWER": {"IN": list(INFORMANT_RELATIVES)}}
    context.add([
        ConTextRule("by <relative>", "PSEUDO", direction="PSEUDO", pattern=[{"LOWER": "by"}, owner, relative]),
        ConTextRule("<relative> reports", "PSEUDO", direction="PSEUDO", pattern=[
            owner, relative, {"LOWER": {"IN": list(INFORMANT_VERBS)}}]),
        ConTextRule("according to <relative>", "PSEUDO", direction="PSEUDO", pattern=[
            {"LOWER": "according"}, {"LOWER": "to"}, owner, relative]),
    ])
    # the patient among the people named: "a family of four all have headaches", "a woman and her husband both have
    # vomiting" (a household's shared illness is the patient's too; "her husband has HIV" stays another's)
    context.add([
        ConTextRule("a family of <count>", "PSEUDO", direction="PSEUDO", pattern=[
            {"LOWER": {"IN": ["a", "the", "whole", "entire"]}}, {"LOWER": "family"}, {"LOWER": "of"},
            {"LOWER": {"REGEX": _COUNT_WORD}}]),
        ConTextRule("<patient> and <possessive> <person>", "PSEUDO", direction="PSEUDO", pattern=[
            {"LOWER": {"IN": list(PATIENT_NOUNS)}}, {"LOWER": "and"}, {"LOWER": {"IN": ["his", "her", "my", "their"]}},
            {"LOWER": {"IN": list(HOUSEHOLD)}}]),
    ])
    # another person's condition: "her boyfriend has HIV", "a coworker who was diagnosed with tuberculosis"
    # (to the sentence's end or the patient's own words, below; medspaCy's max_scope is a window across sentences)
    context.add([ConTextRule("<other person> <verb>", "FAMILY", direction="FORWARD", pattern=[
        {"LOWER": {"IN": list(OTHER_PERSONS)}}, {"LOWER": {"IN": ["who", "that"]}, "OP": "?"},
        {"LOWER": {"IN": list(OTHER_PERSON_VERBS)}}])])
    # ... a relative's or another person's relative clause ends at the patient's own verb ("a woman whose mother had
    # breast cancer has a lump": the lump is hers), medspaCy's relatives' cues as well as the rule above
    for rule in context.rules:
        if rule.category.upper() == "FAMILY" and rule.on_modifies is None:
            rule.on_modifies = _not_past_whose_clause
    # "a cough that won't go away", "a rash I can't get rid of": a complaint that persists, not a denial; "not able
    # to", "unable to": an inability, not a denial
    context.add([ConTextRule(lit, "PSEUDO", direction="PSEUDO")
                 for lit in PERSISTENCE_PHRASES + INABILITY_PHRASES + TEST_NAME_PHRASES])
    # "cannot walk": an inability, where medspaCy's "can not" cue denies (a longer match wins; "cannot be" is left
    # to the cues below); "cannot recall any trauma" denies; "pneumonia cannot be excluded" leaves it possible
    context.add([ConTextRule("can/could not <verb>", "PSEUDO", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["can", "could"]}}, {"LOWER": {"IN": ["not", "n't"]}},
        {"LOWER": {"NOT_IN": ["be", "recall", "remember"]}}])])
    context.add([ConTextRule(lit, "NEGATED_EXISTENCE", direction="FORWARD") for lit in UNRECALLED_PHRASES])
    context.add([ConTextRule("cannot be excluded", "POSSIBLE_EXISTENCE", direction="BACKWARD", pattern=[
        {"LOWER": {"IN": ["can", "could", "ca"]}}, {"LOWER": {"IN": ["not", "n't"]}}, {"LOWER": "be"},
        {"LOWER": {"IN": ["excluded", "ruled"]}}, {"LOWER": "out", "OP": "?"}])])
    # a new clause with its own subject, or a cause, ends a negation's scope (not a history's: "in the past, he has
    # had sunburns"; not a relative's: "a brother who died due to leukaemia")
    # (a pronoun subject is the NEW_SUBJECT rule's below: both end a negation)
    context.add([ConTextRule("<joiner> <possessive>", "CLAUSE_END", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": list(CLAUSE_JOINERS)}},
        {"LOWER": {"IN": [w for w in CLAUSE_SUBJECTS if w not in SUBJECT_PRONOUNS]}}])])
    context.add([ConTextRule("<joiner> <verb>", "CLAUSE_END", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["and", "but"]}}, {"LOWER": {"IN": list(CLAUSE_VERBS)}}])])
    context.add([ConTextRule(lit, "CLAUSE_END", direction="PSEUDO") for lit in CAUSE_PHRASES + EXCEPTION_PHRASES])
    context.add([ConTextRule("<comma> <earlier>", "CLAUSE_END", direction="PSEUDO", pattern=[
        {"LOWER": ","}, {"LOWER": {"IN": list(EARLIER_PHRASES)}}])])
    # the patient speaks again: "her co-worker has tuberculosis and she now has a cough", "a man whose friend has the
    # flu presents with fever" (ends another person's scope; a possessive leads to the next person's cue instead)
    context.add([ConTextRule("<joiner> <pronoun>", "NEW_SUBJECT", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": list(CLAUSE_JOINERS)}}, {"LOWER": {"IN": list(CLAUSE_ADVERBS)}, "OP": "{0,2}"},
        {"LOWER": {"IN": list(SUBJECT_PRONOUNS)}}])])
    context.add([ConTextRule(lit, "NEW_SUBJECT", direction="PSEUDO") for lit in PATIENT_VERBS])
    sectionizer = nlp.add_pipe("medspacy_sectionizer", config={"rules": "default", "span_attrs": "default"})
    sectionizer.add([SectionRule(lit, cat) for lit, cat in EXTRA_SECTION_RULES])
    _headers_need_colon_or_line_start(sectionizer)
    return nlp


def _headers_need_colon_or_line_start(sectionizer) -> None:
    """A few default section rules have no colon ("Allergies", "Vital Signs", "PAST HISTORY"); in running prose
    ("no known allergies", "vital signs are normal") they would open a section in mid-sentence and cut the one
    before short. Keep a header only when it ends with a colon or starts a line."""
    newline = sectionizer.newline_pattern

    def keep(doc, matches):
        return [m for m in matches
                if doc[m[2] - 1].text.endswith(":") or m[1] == 0 or newline.search(doc[m[1] - 1].text_with_ws)]

    sectionizer.require_start_line = True
    sectionizer.filter_start_lines = keep


def _direction(category: str, literal: str) -> str:
    if category == "FAMILY":
        return "BIDIRECTIONAL"
    if literal in ("resolved",):
        return "BACKWARD"
    return "FORWARD"
