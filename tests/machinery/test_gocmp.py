"""go-cmp v0.6.0's report (cmp/report_compare.go, report_reflect.go, report_text.go) over
small Go types: the rules the pod update diff is made of, without a server."""

from __future__ import annotations

from setpoint.machinery.gocmp import GoType, diff
from setpoint.machinery.gocmptext import DiffStats

STR = GoType("string")
NAME = GoType("string", "core.ResourceName", stringer=True)
ITEM = GoType("struct", "core.Item", (("Name", STR), ("Size", GoType("int", "int64"))))
LIST = GoType("struct", "core.List", (("Items", GoType("slice", elem=ITEM)),
                                      ("Labels", GoType("map", key=NAME, elem=STR))))


def _item(name: str, size: int = 0) -> dict[str, object]:
    return {"Name": name, "Size": size}


def test_equal_values_have_no_diff() -> None:
    value = {"Items": [_item("a")], "Labels": None}
    assert diff(LIST, value, value) == ""


def test_a_removed_element_is_a_minus_line_and_a_modified_one_descends() -> None:
    """The edit script keeps "a", finds "b" similar (one of two leaves differs: Modified)
    and "c" gone (UniqueX); a modified struct element is opened, a removed one printed
    whole on its line; a stringer map key is s"..." and the map, two entries, is opened."""
    old = {"Items": [_item("a"), _item("b", 1), _item("c")], "Labels": {"k": "v", "j": "x"}}
    new = {"Items": [_item("a"), _item("b", 2)], "Labels": {"k": "w", "j": "x"}}
    assert diff(LIST, old, new) == (
        "  core.List{\n"
        "  \tItems: []core.Item{\n"
        '  \t\t{Name: "a"},\n'
        "  \t\t{\n"
        '  \t\t\tName: "b",\n'
        "- \t\t\tSize: 1,\n"
        "+ \t\t\tSize: 2,\n"
        "  \t\t},\n"
        '- \t\t{Name: "c"},\n'
        "  \t},\n"
        "  \tLabels: map[core.ResourceName]string{\n"
        '  \t\ts"j": "x",\n'
        '- \t\ts"k": "v",\n'
        '+ \t\ts"k": "w",\n'
        "  \t},\n"
        "  }\n")


def test_a_chain_of_one_child_each_is_printed_whole() -> None:
    """formatDiffList: a record whose descendants form one chain (NumChildren == MaxDepth:
    a map of one changed entry) is printed whole, once removed and once inserted, its type
    shown (a composite under a struct, autoType)."""
    old = {"Items": None, "Labels": {"k": "v"}}
    new = {"Items": None, "Labels": {"k": "w"}}
    assert diff(LIST, old, new) == (
        "  core.List{\n"
        "  \tItems:  nil,\n"
        '- \tLabels: map[core.ResourceName]string{s"k": "v"},\n'
        '+ \tLabels: map[core.ResourceName]string{s"k": "w"},\n'
        "  }\n")


def test_counts_are_worded_as_diff_stats() -> None:
    assert str(DiffStats("entry", identical=3)) == "3 identical entries"
    assert str(DiffStats("field", identical=1)) == "1 identical field"
    assert str(DiffStats("element", removed=1, inserted=2, modified=3)) == (
        "1 removed, 2 inserted, and 3 modified elements")
