"""The runtime cost budget of one ValidatingAdmissionPolicy evaluation, over real HTTP.

Sources (k8s.io/apiserver v0.32.0): pkg/admission/plugin/policy/validating/validator.go
``Validate`` (the validations' ForInput with ``runtimeCELCostBudget``, the messages' with
what is left: an error there fails every validation as "failed messageExpression: ..."),
pkg/admission/plugin/policy/validating/dispatcher.go (``celconfig.RuntimeCELCostBudget``),
pkg/apis/cel/config.go (RuntimeCELCostBudget = 10,000,000; PerCallLimit = 1,000,000),
pkg/admission/plugin/cel/activation.go ``Evaluate`` (every expression's actual cost drawn
from the budget; past it: "validation failed due to running out of cost budget, no further
validation rules will be run"), cel-go checker/cost.go and apiserver pkg/cel/library/cost.go
(``contains``: ceil(0.1 * len) * ceil(0.1 * len(arg)))."""

from __future__ import annotations

from tests.cluster.conftest import API
from tests.cluster.test_admission_policies import CMS, binding, cm, install, policy
from tests.waiting import wait_for

OUT_OF_BUDGET = ("validation failed due to running out of cost budget, no further validation "
                 "rules will be run")
# 900,000 characters: each contains() over it costs 90,000; ten of them stay under the
# per-call limit, twelve such validations pass the 10,000,000 of the policy's budget
TEXT = "a" * 900_000
HEAVY = " || ".join(f"object.data.s.contains('{c}')" for c in "bcdefghijk")


def _denied(policy_name: str, detail: str) -> str:
    return (f'configmaps "heavy" is forbidden: ValidatingAdmissionPolicy \'{policy_name}\' '
            f"with binding '{policy_name}-b' denied request: {detail}")


async def test_validations_share_one_budget(api: API) -> None:
    """Eleven heavy validations (cost just under 10,000,000 together) admit; a twelfth
    runs the policy's budget out: one decision under failurePolicy Fail, Go's words."""
    eleven = [{"expression": f"!({HEAVY})"} for _ in range(11)]
    await install(api, policy("budget-ok", *eleven), binding("budget-ok-b", "budget-ok"))
    status, body = await api.post(CMS, cm("heavy", {"s": TEXT}))
    assert status == 201, body.get("message")
    assert (await api.delete(f"{CMS}/heavy"))[0] == 200
    await install(api, policy("budget", *eleven, {"expression": f"!({HEAVY})"}),
                  binding("budget-b", "budget"))
    status, body = await api.post(CMS, cm("heavy", {"s": TEXT}))
    assert (status, body.get("message")) == (422, _denied("budget", OUT_OF_BUDGET)), body


async def test_messages_spend_what_the_validations_left(api: API) -> None:
    """Six heavy validations leave about 4,600,000; six heavy messageExpressions need
    about 5,400,000: every validation's decision is the message budget's error."""
    message = f"({HEAVY}) ? 'x' : 'y'"
    six = [{"expression": f"!({HEAVY})", "messageExpression": message} for _ in range(6)]
    await install(api, policy("messages", *six), binding("messages-b", "messages"))
    status, body = await api.post(CMS, cm("heavy", {"s": TEXT}))
    assert (status, body.get("message")) == (
        422, _denied("messages", f"failed messageExpression: {OUT_OF_BUDGET}")), body


async def test_match_conditions_have_a_budget_of_their_own(api: API) -> None:
    """matchconditions/matcher.go Match: the conditions' ForInput with
    RuntimeCELCostBudgetMatchConditions (2,500,000); running out is the policy's error
    under failurePolicy Fail (validator.go: matchResults.Error), a skip under Ignore."""
    three = [{"name": f"m{i}", "expression": f"!({HEAVY})"} for i in range(3)]
    await install(api, policy("conditions", {"expression": "false"}, matchConditions=three),
                  binding("conditions-b", "conditions"))
    status, body = await api.post(CMS, cm("heavy", {"s": TEXT}))
    assert (status, body.get("message")) == (422, _denied("conditions", OUT_OF_BUDGET)), body
    ignore = policy("conditions", {"expression": "false"}, matchConditions=three,
                    failurePolicy="Ignore")
    status, current = await api.get(
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/conditions")
    ignore["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    status, body = await api.put(
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/conditions", ignore)
    assert status == 200, body


    async def admitted() -> bool:  # the policy source sees the update as a watch would
        status, _ = await api.post(CMS, cm("heavy", {"s": TEXT}))
        return status == 201
    assert await wait_for(admitted)
