"""
tomllib's messages in a user's words: each problem names line:column, what is wrong, the earlier line it clashes
with and the fix; lines inside multi-line strings and arrays are never taken for keys.
"""

import sys

import pytest

from sispin.lock.toml_words import toml_problem

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

CASES = {
    "a key set twice": ("a = 1\na = 2\n", "at line 2, column 6: key a is set twice (first on line 1): keep one"),
    "a quoted key is the bare one": ('"a" = 1\na = 2\n', "key a is set twice (first on line 1)"),
    "quoted dotted keys": ('a."b.c" = 1\n"a".\'b.c\' = 2\n', "key a.'b.c' is set twice (first on line 1)"),
    "a key in another table is another key": (
        "[x]\na = 1\n[y]\na = 2\n[y]\n",
        "at line 5, column 3: [y] is declared twice (first on line 3): merge the two into one",
    ),
    "not inside a multi-line string": ('a = """\na = 1\n"""\na = 2\n', "key a is set twice (first on line 1)"),
    "not inside an array": ('b = [\n"a = 1",\n]\na = 2\na = 3\n', "key a is set twice (first on line 4)"),
    "a spaced header is the same table": ("[ x . y ]\na=1\n[x.y]\n", "[x.y] is declared twice (first on line 1)"),
    "a header that a dotted key already made": (
        '[repos]\na.url = "u"\n[repos.a]\nb = 2\n',
        "[repos.a] is also defined by key a.url on line 2: write its keys in one place",
    ),
    "an array of tables then a table": ("[[sets]]\n[sets]\n", "[sets] and [[sets]] on line 1 declare one table two"),
    "a table then an array of tables": ("[sets]\n[[sets]]\n", "[[sets]] and [sets] on line 1 declare one table two"),
    "a dotted key into a value": ("a = 1\na.b = 2\n", "key a.b writes into key a, set to a value on line 1: keep"),
    "a dotted key into a declared table": (
        "[x.y]\n[x]\ny.z = 1\n",
        "at line 3, column 8: key y.z adds to table [x.y] of line 1: write the key under that header",
    ),
    "a dotted key into an inline table": ("x = {a = 1}\nx.b = 2\n", "key x.b adds to key x of line 1, an inline"),
    "a key twice in an inline table": ("x = {a = 1, a = 2}\n", "'a' is set twice in one inline table {...}: keep one"),
    "an unclosed literal string": ("a = 'x\n", "at the end of the file: a '...' string is not closed"),
    "a bad first character": ("?a = 1\n", "not a statement: a line is key = value, a [table] header or a # comment"),
}


@pytest.mark.parametrize("text, said", CASES.values(), ids=CASES.keys())
def test_a_toml_problem_is_said_with_the_line_it_clashes_with(text, said):
    with pytest.raises(tomllib.TOMLDecodeError) as raised:
        tomllib.loads(text)
    assert said in toml_problem(str(raised.value), text)


def test_a_message_without_a_place_keeps_tomllib_words():
    assert toml_problem("something new", "a = 1\n") == ": something new"
