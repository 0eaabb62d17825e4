"""`review`: the user's version of an edit, and what the model is told about it."""

from __future__ import annotations

from runtime.tools.builtin.review import rejected_hunks, review_note, user_text

TEN = "".join(f"{n}\n" for n in range(1, 11))


def test_the_users_lines_take_the_proposals_line_endings_and_unchanged_lines_keep_their_bytes() -> (
    None
):
    proposal = "a\r\nb\nc\r\n"  # mixed endings: an editor's document would normalize them
    assert user_text(proposal, "a\nB\nc\n") == "a\r\nB\r\nc\r\n"
    assert user_text(proposal, "a\r\nb\r\nc\r\n") == proposal  # only endings differ: unchanged
    assert user_text("x\r\ny\r\n", "x\r\nnew\r\ny\r\n") == "x\r\nnew\r\ny\r\n"


def test_the_final_newline_is_the_users() -> None:
    assert user_text("a\nb\n", "a\nb") == "a\nb"
    assert user_text("a\nb", "a\nb\nc\n") == "a\nb\nc\n"
    assert user_text("a\nb", "a\nb\nc") == "a\nb\nc"  # b is followed now: it gets its break
    assert user_text("a\n", "") == ""


def test_a_hunk_the_user_put_back_is_rejected_and_a_changed_one_is_not() -> None:
    proposal = TEN.replace("2\n", "two\n").replace("5\n", "five\n").replace("9\n", "nine\n")
    reverted = proposal.replace("five\n", "5\n")
    assert rejected_hunks(TEN, proposal, reverted) == (["line 5 of the original"], 3)
    changed = proposal.replace("five\n", "FIVE\n")
    assert rejected_hunks(TEN, proposal, changed) == ([], 3)


def test_a_rejected_insertion_and_deletion_are_named() -> None:
    proposal = TEN.replace("3\n", "3\nnew\n").replace("7\n8\n", "")
    assert rejected_hunks(TEN, proposal, TEN) == (["after line 3", "lines 7-8 of the original"], 2)


def test_the_note_has_the_rejected_hunks_and_a_unified_diff_of_the_proposal() -> None:
    proposal = TEN.replace("2\n", "two\n").replace("9\n", "nine\n")
    written = proposal.replace("nine\n", "9\n")
    note = review_note("n.txt", TEN, proposal, written)
    assert note.startswith("The user changed your proposed edit before allowing it")
    assert "They rejected 1 of the 2 hunks of your change (line 9 of the original)" in note
    assert "--- n.txt (your proposal)\n+++ n.txt (written)\n" in note
    assert note.endswith(" 8\n-nine\n+9\n 10")
    assert review_note("n.txt", TEN, proposal, proposal) == ""
    assert "rejected" not in review_note("new.txt", None, "a\n", "b\n")
