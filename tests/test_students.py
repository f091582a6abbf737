"""app/students.py: who a session is. A signed-in user's key is their provider's user (hashed), the
same in every browser; a listed email or group makes a teacher; an old sign-in is anonymous again."""

from __future__ import annotations

from app import students
from app.students import ANONYMOUS, SIGNED_IN, signed_in, teacher_by_claims, user_id

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
