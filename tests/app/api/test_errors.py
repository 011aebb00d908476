"""How refusals are rendered: ``ApiError`` as JSON or text, a body that is
not JSON as 400, JSON whose fields do not fit as 422 naming each field."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from app.api.errors import ApiError, install_error_handlers


class Thing(BaseModel):
    name: str = Field(max_length=3)
    size: int


def app() -> FastAPI:
    api = FastAPI()
    install_error_handlers(api)

    @api.get("/json")
    def json_refusal() -> None:
        raise ApiError(409, "taken", headers={"Retry-After": "5"})

    @api.get("/plain")
    def plain_refusal() -> None:
        raise ApiError(401, "no token", plain=True)

    @api.post("/things")
    def post_thing(thing: Thing) -> Thing:
        return thing

    return api


def test_an_api_error_answers_its_status_detail_and_headers_as_json() -> None:
    reply = TestClient(app()).get("/json")
    assert (reply.status_code, reply.json()) == (409, {"detail": "taken"})
    assert reply.headers["retry-after"] == "5"


def test_a_plain_api_error_answers_text_for_the_legacy_uploader() -> None:
    reply = TestClient(app()).get("/plain")
    assert (reply.status_code, reply.text) == (401, "no token")
    assert reply.headers["content-type"].startswith("text/plain")


def test_status_is_the_status_code() -> None:
    assert ApiError(429, "later").status == 429


def test_a_body_that_is_not_json_is_400_saying_so() -> None:
    reply = TestClient(app()).post(
        "/things", content=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 400
    assert reply.json()["detail"].startswith("the request body is not valid JSON: ")


def test_json_whose_fields_do_not_fit_is_422_naming_each_field() -> None:
    reply = TestClient(app()).post("/things", json={"name": "toolong", "size": "big"})
    assert reply.status_code == 422
    problems = reply.json()["detail"].split("; ")
    assert [p.split(":")[0] for p in problems] == ["name", "size"]
    assert "at most 3 characters" in problems[0]
