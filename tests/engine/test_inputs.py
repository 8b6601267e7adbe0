"""engine.inputs: declared input types convert text and refuse what does not fit; unknown names get a suggestion."""

from __future__ import annotations

import pytest

from sherpa_skills import load_workflow_text
from sherpa_skills.engine.inputs import check_inputs
from sherpa_skills.errors import UsageError

SPEC = load_workflow_text("""
name: typed
inputs:
  flag: {type: boolean}
  count: {type: integer}
  ratio: {type: number}
  label: {type: string}
  items: {type: array}
  options: {type: object}
  anything: {}
  needed: {required: true}
initial: a
states: {a: {final: true}}
""").spec


class TestConversion:
    @pytest.mark.parametrize(
        ("name", "given", "expected"),
        [
            ("flag", "no", False),
            ("flag", "OFF", False),
            ("flag", "0", False),
            ("flag", " yes ", True),
            ("flag", True, True),
            ("flag", 0, False),
            ("count", "12", 12),
            ("count", "12.0", 12),
            ("count", 7, 7),
            ("ratio", "0.25", 0.25),
            ("ratio", 3, 3),
            ("label", "02134", "02134"),
            ("label", 3, "3"),
            ("items", "[1, 2]", [1, 2]),
            ("items", ["a"], ["a"]),
            ("options", '{"a": 1}', {"a": 1}),
            ("anything", "no", "no"),
            ("anything", None, None),
        ],
    )
    def test_declared_types_convert(self, name, given, expected):
        got = check_inputs(SPEC, {name: given}, starting=False)[name]
        assert got == expected and type(got) is type(expected)

    @pytest.mark.parametrize(
        ("name", "given", "fragment"),
        [
            ("flag", "maybe", "input 'flag' must be a boolean"),
            ("flag", 2, "must be a boolean"),
            ("count", "abc", "input 'count' must be an integer"),
            ("count", "1.5", "a whole number"),
            ("count", True, "must be an integer"),
            ("ratio", "nan", "must be a number"),
            ("ratio", "inf", "must be a number"),
            ("ratio", [1], "must be a number"),
            ("label", {"a": 1}, "must be a string"),
            ("items", "not json", "must be an array (JSON)"),
            ("items", '{"a": 1}', "must be an array"),
            ("options", "[1]", "must be an object"),
        ],
    )
    def test_values_that_do_not_fit_are_refused_naming_the_input(self, name, given, fragment):
        with pytest.raises(UsageError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            check_inputs(SPEC, {name: given}, starting=False)

    def test_a_long_hostile_value_is_cut_in_the_message(self):
        with pytest.raises(UsageError) as err:
            check_inputs(SPEC, {"count": "x" * 5000}, starting=False)
        assert len(str(err.value)) < 200


class TestNames:
    def test_unknown_names_are_refused_with_a_suggestion(self):
        with pytest.raises(UsageError, match="has no input 'cuont'; did you mean 'count'\\? its inputs: flag, count"):
            check_inputs(SPEC, {"cuont": 1}, starting=False)

    def test_unknown_names_without_a_close_one_list_the_inputs(self):
        with pytest.raises(UsageError) as err:
            check_inputs(SPEC, {"zzz": 1}, starting=False)
        assert "did you mean" not in str(err.value) and "its inputs: flag, count, ratio" in str(err.value)

    def test_a_workflow_without_declared_inputs_takes_any_name(self):
        free = load_workflow_text("name: free\ninitial: a\nstates: {a: {final: true}}\n").spec
        assert check_inputs(free, {"whatever": "no"}, starting=True) == {"whatever": "no"}

    def test_required_inputs_are_checked_only_when_starting(self):
        with pytest.raises(UsageError, match="needs input 'needed'"):
            check_inputs(SPEC, {}, starting=True)
        assert check_inputs(SPEC, {}, starting=False) == {}


def test_the_agent_converts_inputs_at_start_and_at_resume(runner):
    """The library path does the same as the CLI: an embedder's `{"flag": "no"}` is False in the context."""
    workflow = load_workflow_text("""
name: waits
inputs: {flag: {type: boolean}, n: {type: integer}}
initial: wait
states:
  wait: {waiting: true}
  sent: {final: true}
  kept: {final: true}
transitions:
  - {trigger: go_yes, source: wait, dest: sent, conditions: {context_true: {key: flag}}}
  - {trigger: go_no, source: wait, dest: kept, conditions: {context_equals: {key: flag, value: false}}}
""")
    agent = workflow.agent()
    first = runner(agent, {"n": "3"})
    assert (first.status, first.context["n"]) == ("waiting", 3)
    assert runner(agent, {"flag": "no"}).state == "kept"
    refused = runner(workflow.agent(), {"n": "three"})
    assert refused.status == "error" and "input 'n' must be an integer" in refused.error


def test_the_library_takes_undeclared_names_as_context(runner):
    """Embedders may hand any context key to a run; only the command line refuses names the workflow does not
    declare."""
    workflow = load_workflow_text("name: w\ninputs: {n: {type: integer}}\ninitial: a\nstates: {a: {waiting: true}}\n")
    result = runner(workflow.agent(), {"n": "2", "extra": "kept"})
    assert (result.context["n"], result.context["extra"]) == (2, "kept")


def test_a_minimum_refuses_smaller_numbers_naming_the_input():
    spec = load_workflow_text("""
name: bounded
inputs:
  budget: {type: integer, minimum: 1}
initial: a
states: {a: {final: true}}
""").spec
    assert check_inputs(spec, {"budget": "3"}, starting=True)["budget"] == 3
    with pytest.raises(UsageError, match="'budget' must be at least 1, got 0"):
        check_inputs(spec, {"budget": "0"}, starting=True)


def test_a_minimum_on_an_input_that_is_not_a_number_is_a_spec_error():
    with pytest.raises(Exception, match="minimum"):
        load_workflow_text(
            "name: w\ninputs:\n  label: {type: string, minimum: 1}\ninitial: a\nstates: {a: {final: true}}\n"
        )
