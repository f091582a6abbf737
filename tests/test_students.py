"""app/students.py: who a session is. A signed-in user's key is their provider's user (hashed), the
same in every browser; a listed email or group makes a teacher; an old sign-in is anonymous again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app import students
from app.class_store.service import JOINED
from app.students import ANONYMOUS, SIGNED_IN, signed_in, teacher_by_claims, user_id

ROOT = Path(__file__).resolve().parent.parent
NOW = 1_900_000_000.0
ALICE = {
    "is_logged_in": True,
    "iss": "http://127.0.0.1:9400",
    "sub": "alice-42",
    "email": "Alice@School.example",
    "email_verified": True,
    "name": "Alice Liddell",
    "nickname": "rabbit",
    "iat": NOW - 60,
}


def test_a_signed_in_user_is_their_provider_user_hashed(monkeypatch):
    monkeypatch.setattr(students, "anonymous_key", lambda: "browser:b1")
    who = signed_in(ALICE, now=NOW)
    assert who.via == SIGNED_IN and who.key == f"user:{user_id(ALICE['iss'], 'alice-42')}"
    assert who.name == "Alice Liddell" and who.email == ALICE["email"] and who.nickname == "rabbit"
    assert "alice" not in who.key.lower() and "school" not in who.key.lower()  # no email or name in the key
    assert signed_in({**ALICE, "iat": NOW - 3000}, now=NOW).key == who.key  # every browser, every sign-in
    assert signed_in({**ALICE, "sub": "bob"}, now=NOW).key != who.key
    assert signed_in({**ALICE, "iss": "http://elsewhere"}, now=NOW).key != who.key  # sub is unique per issuer
    assert signed_in({**ALICE, "sub": ""}, now=NOW) is None and signed_in({"is_logged_in": True}, now=NOW) is None


def test_a_sign_in_older_than_the_setting_or_without_an_issue_time_is_anonymous_again(monkeypatch):
    monkeypatch.setattr(students, "anonymous_key", lambda: "browser:b1")
    monkeypatch.setenv("BERT_EXPLORER_SIGNIN_HOURS", "2")
    assert signed_in({**ALICE, "iat": NOW - 2 * 3600 + 5}, now=NOW).via == SIGNED_IN
    for claims in ({**ALICE, "iat": NOW - 2 * 3600 - 5}, {**ALICE, "iat": None}, {**ALICE, "iat": NOW + 3600}):
        who = signed_in(claims, now=NOW)
        assert (who.via, who.key, who.expired, who.name, who.teacher) == (ANONYMOUS, "browser:b1", True, "", False)


def test_a_teacher_is_a_listed_verified_email_or_a_listed_group(monkeypatch):
    assert not teacher_by_claims(ALICE)  # nothing listed: nobody
    monkeypatch.setenv("BERT_EXPLORER_TEACHER_EMAILS", "bob@school.example, alice@school.example")
    assert teacher_by_claims(ALICE)  # case-insensitive
    assert not teacher_by_claims({**ALICE, "email_verified": False})  # an unverified email is not proof
    assert not teacher_by_claims({**ALICE, "email": "alice@school.example.evil"})
    monkeypatch.delenv("BERT_EXPLORER_TEACHER_EMAILS")
    monkeypatch.setenv("BERT_EXPLORER_TEACHER_GROUPS", "staff")
    assert teacher_by_claims({**ALICE, "groups": ["pupils", "Staff"]}) and teacher_by_claims(
        {**ALICE, "groups": "staff"}
    )
    assert not teacher_by_claims({**ALICE, "groups": ["pupils"]}) and not teacher_by_claims({**ALICE, "groups": 7})
    monkeypatch.setenv("BERT_EXPLORER_GROUPS_CLAIM", "roles")
    assert not teacher_by_claims({**ALICE, "groups": ["staff"]}) and teacher_by_claims({**ALICE, "roles": ["staff"]})


def test_sign_in_is_off_without_an_auth_section_and_then_everyone_is_anonymous():
    """The project's own secrets (none in the repository): sign-in off, the cookie identity stays."""
    assert not students.signin_on()
    who = students.identity()
    assert who.via == ANONYMOUS and not who.teacher and who.key.startswith(("browser:", "session:"))


AUTH = {
    "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
    "cookie_secret": "a cookie secret of the test",
    "client_id": "bert-explorer",
    "client_secret": "a client secret",
    "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",  # nothing listens there
}


def shown(element) -> str:
    """An element's text as the reader sees it (Markdown's escapes taken out)."""
    return element.value.replace("\\", "")


def board_page(monkeypatch, user: dict | None, auth: dict = AUTH):
    """The Class board page with sign-in configured (`auth` as secrets.toml's [auth]) and `user`
    as st.user (None: nobody signed in)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    monkeypatch.delenv("BERT_EXPLORER_TEACHER_KEY", raising=False)
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.secrets["auth"] = auth
    if user is not None:
        at.user = {"is_logged_in": True, **user}
    at.run()
    at.switch_page("pages/board.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_on_the_board_a_listed_teacher_starts_a_board_and_a_signed_in_student_cannot(board, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_TEACHER_GROUPS", "staff")
    claims = {**ALICE, "iat": time.time() - 60}
    at = board_page(monkeypatch, {**claims, "groups": ["staff"]})
    assert any("Signed in as Alice Liddell (teacher)." in c.value for c in at.sidebar.caption)
    at.button(key="board_start").click().run()
    code = at.session_state[JOINED]
    assert not at.exception and board.exists(code)

    at = board_page(monkeypatch, {**claims, "groups": ["pupils"]})
    assert any("settings do not list you" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "board_start"]
    assert not [t for t in at.text_input if t.key == "teacher_key_typed"]  # no key set: no box either


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_a_misconfigured_sign_in_says_which_setting_and_never_a_traceback(board, monkeypatch):
    at = board_page(monkeypatch, None, {k: v for k, v in AUTH.items() if k != "client_secret"})
    assert any("secrets.toml [auth] has no client_secret" in shown(e) for e in at.sidebar.error)
    at = board_page(monkeypatch, None)  # complete, but the provider does not answer
    assert not at.sidebar.error
    at.sidebar.button(key="signin_in").click().run()
    assert not at.exception
    (err,) = at.sidebar.error
    assert "does not answer" in shown(err) and "server_metadata_url" in shown(err)
    assert at.sidebar.button(key="signin_in")  # still there: try again once the provider is back


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_the_nickname_box_offers_the_providers_nickname_claim(board, monkeypatch):
    """Signed in (st.user faked as the provider's claims), a finished run's nickname box holds the
    `nickname` claim, and posting under it keeps the real name for the teacher."""
    from streamlit.testing.v1 import AppTest

    from app import state, students
    from app.run_session import session as ts
    from tests.helpers import finished_result

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, key = board.new_board()
    base, res = finished_result()
    res["code"] = "ABCDEF"
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.secrets["auth"] = AUTH
    at.user = {**ALICE, "iat": time.time() - 60}
    at.run()
    res["student"] = f"user:{students.user_id(ALICE['iss'], ALICE['sub'])}"  # trained by Alice
    at.session_state[state.USER_MODELS]["tiny"] = base
    at.session_state[state.USER_MODEL_IDS]["tiny"] = "session:tiny:t"
    at.session_state[ts.FT_RESULTS] = [res]
    at.session_state[JOINED] = code
    at.switch_page("pages/finetune.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="ft_board_nick").value == ALICE["nickname"]
    at.button(key=f"ft_board_post_{res['job_id']}").click().run()
    assert not at.exception and any("Posted to board" in s.value for s in at.success)
    assert [e["nickname"] for e in board.entries(code)] == ["rabbit"]
    assert board.names(code, key) == {"rabbit": (ALICE["name"], ALICE["email"])}
