"""Every endpoint of the task API over real HTTP, on SQLite and PostgreSQL: success and error bodies."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from deskpilot import __version__
from deskpilot.tasks.executor import UnavailableExecutor
from deskpilot.tasks.leases import Leases
from testbed.task_service import NO_DESKTOP_FILES_DIR, serve, with_store

ERROR_KEYS = {"statusCode", "message", "error"}
TASK_KEYS = {
    "id", "description", "status", "priority", "type", "scheduledFor", "model", "control", "createdBy",
    "error", "result", "createdAt", "updatedAt", "executedAt", "completedAt", "desktop", "desktopLabel",
    "executedOn", "usage",
}  # fmt: skip


def assert_error(r: httpx.Response, status: int, *fragments: str) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == ERROR_KEYS
    assert body["statusCode"] == status
    assert body["error"] == httpx.codes.get_reason_phrase(status)
    for f in fragments:
        assert f in body["message"], body["message"]
    return body


def create(api: httpx.Client, description: str = "open the browser", **fields) -> dict:
    r = api.post("/tasks", json={"description": description, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def claim(db_url: str, worker: str = "test-worker") -> dict | None:
    async def go(store):
        task = await Leases(store).claim_next(worker, 60)
        return None if task is None else {"id": task.id, "status": task.status}

    return with_store(db_url, go)


def test_health_reports_backend(api: httpx.Client, db_url: str) -> None:
    r = api.get("/health")
    assert r.status_code == 200
    assert r.json() == {
        "status": "ok",
        "version": __version__,
        "database": "sqlite" if db_url.startswith("sqlite") else "postgresql",
        "worker": False,
    }


def test_create_task_json_defaults_and_first_message(api: httpx.Client) -> None:
    t = create(api, "find the weather in Paris")
    assert set(t) == TASK_KEYS
    assert t["status"] == "PENDING" and t["priority"] == "MEDIUM" and t["type"] == "IMMEDIATE"
    assert t["control"] == "ASSISTANT" and t["createdBy"] == "USER" and t["scheduledFor"] is None
    assert t["createdAt"] == t["updatedAt"] and t["createdAt"].endswith("Z")
    assert t["usage"] == {"promptTokens": 0, "completionTokens": 0, "totalTokens": 0}
    got = api.get(f"/tasks/{t['id']}").json()
    assert set(got) == TASK_KEYS | {"messages", "files"}
    assert got["files"] == []
    [m] = got["messages"]
    assert m["role"] == "USER" and m["taskId"] == t["id"]
    assert m["content"] == [{"type": "text", "text": "find the weather in Paris"}]


def test_create_task_with_every_field(api: httpx.Client) -> None:
    when = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    t = create(
        api, "later", priority="URGENT", type="SCHEDULED", scheduledFor=when.isoformat(), model={"name": "m1"}
    )
    assert t["priority"] == "URGENT" and t["type"] == "SCHEDULED" and t["model"] == "m1"
    assert datetime.fromisoformat(t["scheduledFor"]) == when
    # scheduledFor alone implies SCHEDULED; a naive time is UTC
    t2 = create(api, "later too", scheduledFor=when.replace(tzinfo=None).isoformat())
    assert t2["type"] == "SCHEDULED" and datetime.fromisoformat(t2["scheduledFor"]) == when


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        ({}, ["description: field required"]),
        ({"description": ""}, ["description:"]),
        ({"description": 3}, ["description:", "string"]),
        ({"description": "x", "priority": "SOON"}, ["priority:", "'URGENT'"]),
        ({"description": "x", "type": "LATER"}, ["type:"]),
        ({"description": "x", "type": "SCHEDULED"}, ["scheduledFor: required"]),
        (
            {"description": "x", "type": "IMMEDIATE", "scheduledFor": "2030-01-01T00:00:00Z"},
            ["scheduledFor:"],
        ),
        ({"description": "x", "scheduledFor": "tomorrow"}, ["scheduledFor:"]),
        ({"description": "x", "files": [{"name": "a.txt"}]}, ["files[0].data: required"]),
        (
            {"description": "x", "files": [{"name": "a.txt", "data": "***"}]},
            ["files[0].data: not valid base64"],
        ),
        ({"description": "x", "files": [{"data": "aGk="}]}, ["files[0].name: field required"]),
        ([1, 2], ["body: must be a JSON object"]),
    ],
)
def test_create_task_rejects_invalid_json_naming_the_field(api: httpx.Client, body, fragments) -> None:
    assert_error(api.post("/tasks", json=body), 400, *fragments)


def test_create_task_rejects_malformed_body_and_content_type(api: httpx.Client) -> None:
    assert_error(
        api.post("/tasks", content=b"{", headers={"content-type": "application/json"}), 400, "invalid JSON"
    )
    assert_error(
        api.post("/tasks", content=b"x", headers={"content-type": "text/plain"}),
        415,
        "Content-Type must be application/json or multipart/form-data",
    )


def test_create_task_multipart_stores_files_with_safe_names(api: httpx.Client) -> None:
    r = api.post(
        "/tasks",
        data={"description": "summarise these", "priority": "HIGH"},
        files=[
            ("files", ("../../etc/passwd", b"root:x", "text/plain")),
            ("files", ("report.pdf", b"%PDF-1.4 one", "application/pdf")),
            ("files", ("sub/report.pdf", b"%PDF-1.4 two", "application/pdf")),
            ("files", (".hidden:na*me.png", b"\x89PNG", "image/png")),
        ],
    )
    assert r.status_code == 201, r.text
    t = r.json()
    assert t["priority"] == "HIGH" and t["status"] == "PENDING"
    got = api.get(f"/tasks/{t['id']}").json()
    files = {f["name"]: f for f in got["files"]}
    assert set(files) == {"passwd", "report.pdf", "report (2).pdf", "hidden_na_me.png"}
    assert files["report.pdf"]["size"] == len(b"%PDF-1.4 one")
    assert files["report.pdf"]["mediaType"] == "application/pdf"
    assert files["passwd"]["path"] == f"{NO_DESKTOP_FILES_DIR}/passwd"
    assert all(f["writtenAt"] is None for f in got["files"])
    note = got["messages"][0]["content"][1]["text"]
    for f in got["files"]:
        assert f["path"] in note


def test_create_task_json_files_are_decoded(api: httpx.Client) -> None:
    data = base64.b64encode(b"hello desktop").decode()
    t = create(api, "read it", files=[{"name": "hello.txt", "data": data}, {"name": "b.bin", "base64": data}])
    got = api.get(f"/tasks/{t['id']}").json()
    assert sorted((f["name"], f["size"], f["mediaType"]) for f in got["files"]) == [
        ("b.bin", 13, "application/octet-stream"),
        ("hello.txt", 13, "text/plain"),
    ]


def test_upload_limits_answer_400_for_count_and_413_for_size(db_url: str) -> None:
    with serve(db_url, max_files=2, max_file_bytes=10, max_upload_bytes=15) as api:
        many = [("files", (f"{i}.txt", b"x", "text/plain")) for i in range(3)]
        assert_error(
            api.post("/tasks", data={"description": "d"}, files=many), 400, "Maximum number of files is 2"
        )
        big = [("files", ("big.txt", b"x" * 11, "text/plain"))]
        assert_error(api.post("/tasks", data={"description": "d"}, files=big), 413, "big.txt", "limit is 10")
        total = [("files", ("a.txt", b"x" * 8, "text/plain")), ("files", ("b.txt", b"x" * 8, "text/plain"))]
        assert_error(api.post("/tasks", data={"description": "d"}, files=total), 413, "limit is 15")
        j = {"description": "d", "files": [{"name": "big.txt", "data": base64.b64encode(b"x" * 11).decode()}]}
        assert_error(api.post("/tasks", json=j), 413, "big.txt")
        j = {"description": "d", "files": [{"name": f"{i}", "data": ""} for i in range(3)]}
        assert_error(api.post("/tasks", json=j), 400, "at most 2 files")
        assert_error(
            api.post("/tasks", content=b"x" * 2_000_000, headers={"content-type": "application/json"}),
            413,
            "upload limit",
        )
        assert api.get("/tasks").json() == []


def test_multipart_without_description_is_400(api: httpx.Client) -> None:
    assert_error(
        api.post("/tasks", data={"priority": "LOW"}, files=[("files", ("a", b"1"))]),
        400,
        "description: field required",
    )
    assert_error(api.post("/tasks", data={"description": "x"}, files=[("doc", ("a", b"1"))]), 400, "doc:")
    text = {"description": "x", "files": "not a file"}
    assert_error(
        api.post("/tasks", data=text, files=[("files", ("a", b"1"))]), 400, "files: must be file parts"
    )
    # an HTML form's empty file input sends an empty text part: no file
    r = api.post("/tasks", data={"description": "x", "files": ""}, files=[("files", ("a", b"1"))])
    assert r.status_code == 201 and len(api.get(f"/tasks/{r.json()['id']}").json()["files"]) == 1


def test_list_tasks_newest_first_with_filters_and_total(api: httpx.Client, db_url: str) -> None:
    ids = [create(api, f"task {i}")["id"] for i in range(5)]
    r = api.get("/tasks")
    assert r.status_code == 200 and r.headers["x-total-count"] == "5"
    assert [t["id"] for t in r.json()] == ids[::-1]
    assert "messages" not in r.json()[0]
    page = api.get("/tasks", params={"limit": 2, "offset": 1})
    assert [t["id"] for t in page.json()] == ids[3:1:-1] and page.headers["x-total-count"] == "5"
    api.patch(f"/tasks/{ids[0]}", json={"status": "CANCELLED"})
    running = claim(db_url)
    assert running is not None
    assert [t["id"] for t in api.get("/tasks", params={"status": "CANCELLED"}).json()] == [ids[0]]
    both = api.get("/tasks", params={"statuses": "CANCELLED,IN_PROGRESS"})
    assert {t["id"] for t in both.json()} == {ids[0], running["id"]} and both.headers["x-total-count"] == "2"
    repeated = api.get("/tasks", params=[("statuses", "CANCELLED"), ("statuses", "IN_PROGRESS")])
    assert {t["id"] for t in repeated.json()} == {ids[0], running["id"]}
    assert api.get("/tasks", params={"status": "PENDING"}).headers["x-total-count"] == "3"


def test_list_endpoints_page_by_page_as_well_as_by_offset(api: httpx.Client) -> None:
    """?page=2 is the second page of `limit` items, never page 1 again; page with offset is refused."""
    ids = [create(api, f"task {i}")["id"] for i in range(5)][::-1]  # newest first
    pages = [
        [t["id"] for t in api.get("/tasks", params={"limit": 2, "page": n}).json()] for n in (1, 2, 3, 4)
    ]
    assert pages == [ids[0:2], ids[2:4], ids[4:], []]
    same = api.get("/tasks", params={"limit": 2, "offset": 2})
    assert [t["id"] for t in same.json()] == pages[1] and same.headers["x-total-count"] == "5"
    task = ids[0]
    for text in ("one", "two", "three"):
        api.post(f"/tasks/{task}/messages", json={"content": text})
    second = api.get(f"/tasks/{task}/messages", params={"limit": 2, "page": 2}).json()
    assert [m["content"][0]["text"] for m in second] == ["two", "three"]  # after the description and "one"
    for path in ("/tasks", f"/tasks/{task}/messages"):
        assert_error(api.get(path, params={"page": 2, "offset": 0}), 400, "page: give either")
        assert_error(api.get(path, params={"page": 0}), 400, "page:")


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"status": "DONE"}, "status:"),
        ({"statuses": "PENDING,DONE"}, "statuses: unknown status 'DONE'"),
        ({"statuses": ""}, "statuses: unknown status ''"),
        ({"statuses": "PENDING,,FAILED"}, "statuses: unknown status ''"),
        ({"limit": 0}, "limit:"),
        ({"limit": 1001}, "limit:"),
        ({"offset": -1}, "offset:"),
        ({"limit": "many"}, "limit:"),
    ],
)
def test_list_tasks_rejects_bad_filters(api: httpx.Client, params, fragment) -> None:
    assert_error(api.get("/tasks", params=params), 400, fragment)


def test_in_progress_is_null_then_the_running_task(api: httpx.Client, db_url: str) -> None:
    r = api.get("/tasks/in-progress")
    assert r.status_code == 200 and r.content == b"null"
    t = create(api)
    claim(db_url)
    got = api.get("/tasks/in-progress").json()
    assert got["id"] == t["id"] and got["status"] == "IN_PROGRESS" and got["executedAt"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/tasks/{id}", None),
        ("PATCH", "/tasks/{id}", {"priority": "LOW"}),
        ("DELETE", "/tasks/{id}", None),
        ("GET", "/tasks/{id}/messages", None),
        ("POST", "/tasks/{id}/messages", {"content": "hi"}),
        ("POST", "/tasks/{id}/takeover", None),
        ("POST", "/tasks/{id}/resume", None),
    ],
)
def test_unknown_task_id_is_404_with_the_spec_message(api: httpx.Client, method, path, body) -> None:
    missing = "3f2a7c1e-0000-4000-8000-000000000000"
    r = api.request(method, path.format(id=missing), json=body)
    assert_error(r, 404)
    assert r.json()["message"] == f"Task with ID {missing} not found"


def test_patch_priority_and_description(api: httpx.Client, db_url: str) -> None:
    t = create(api)
    r = api.patch(f"/tasks/{t['id']}", json={"priority": "URGENT", "description": "open firefox"})
    assert r.status_code == 200
    got = r.json()
    assert got["priority"] == "URGENT" and got["description"] == "open firefox"
    assert got["updatedAt"] > t["updatedAt"]
    claim(db_url)
    assert api.patch(f"/tasks/{t['id']}", json={"priority": "LOW"}).json()["priority"] == "LOW"
    assert_error(
        api.patch(f"/tasks/{t['id']}", json={"description": "else"}),
        400,
        "description:",
        "PENDING",
        "IN_PROGRESS",
    )
    assert_error(api.patch(f"/tasks/{t['id']}", json={"priority": "NOW"}), 400, "priority:")
    assert_error(api.patch(f"/tasks/{t['id']}", json={"status": "DONE"}), 400, "status:")
    assert_error(
        api.patch(f"/tasks/{t['id']}", content=b"[", headers={"content-type": "application/json"}), 400
    )


def test_patch_status_refusals_name_the_allowed_moves(api: httpx.Client) -> None:
    t = create(api)
    body = assert_error(api.patch(f"/tasks/{t['id']}", json={"status": "COMPLETED"}), 400)
    assert body["message"] == "Cannot move task from PENDING to COMPLETED. Allowed from PENDING: CANCELLED"
    body = assert_error(api.patch(f"/tasks/{t['id']}", json={"status": "IN_PROGRESS"}), 400, "queue")
    r = api.patch(f"/tasks/{t['id']}", json={"status": "CANCELLED"})
    assert r.status_code == 200 and r.json()["status"] == "CANCELLED" and r.json()["completedAt"]
    r = api.patch(f"/tasks/{t['id']}", json={"status": "PENDING"})
    assert r.json()["status"] == "PENDING" and r.json()["completedAt"] is None


def test_messages_post_and_list_with_paging(api: httpx.Client) -> None:
    t = create(api)
    r = api.post(f"/tasks/{t['id']}/messages", json={"content": "use the second tab"})
    assert r.status_code == 201
    m = r.json()
    assert set(m) == {"id", "taskId", "role", "content", "createdAt", "updatedAt"}
    assert m["role"] == "USER" and m["content"] == [{"type": "text", "text": "use the second tab"}]
    blocks = [{"type": "text", "text": "and this"}, {"type": "image", "source": {"type": "base64",
              "media_type": "image/png", "data": "iVBORw0KGgo="}}]  # fmt: skip
    assert api.post(f"/tasks/{t['id']}/messages", json={"content": blocks}).json()["content"] == blocks
    r = api.get(f"/tasks/{t['id']}/messages")
    assert r.headers["x-total-count"] == "3"
    assert [x["content"][0]["text"] for x in r.json()] == [
        "open the browser",
        "use the second tab",
        "and this",
    ]
    r = api.get(f"/tasks/{t['id']}/messages", params={"limit": 1, "offset": 1})
    assert [x["id"] for x in r.json()] == [m["id"]]
    assert_error(api.post(f"/tasks/{t['id']}/messages", json={"content": ""}), 400, "content:")
    assert_error(api.post(f"/tasks/{t['id']}/messages", json={}), 400, "content: field required")
    assert_error(api.post(f"/tasks/{t['id']}/messages", json={"content": [{"text": "x"}]}), 400, "content")
    assert_error(api.get(f"/tasks/{t['id']}/messages", params={"limit": 0}), 400, "limit:")


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (2**64, "does not fit in 64 bits"),
        (-(2**63) - 1, "does not fit in 64 bits"),
        ([[2**100]], "does not fit in 64 bits"),
        ("300-deep", "nested deeper than"),
    ],
    ids=["2**64", "-2**63-1", "inside-a-list", "300-deep"],
)
def test_content_that_cannot_be_served_back_is_refused(api: httpx.Client, value, fragment) -> None:
    t = create(api)
    value = nested(300) if value == "300-deep" else value
    r = api.post(f"/tasks/{t['id']}/messages", json={"content": [{"type": "data", "value": value}]})
    assert_error(r, 400, "content:", fragment)
    assert api.get(f"/tasks/{t['id']}").status_code == 200
    assert api.get(f"/tasks/{t['id']}/messages").json()[-1]["content"][0]["text"] == "open the browser"


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_numbers_json_cannot_carry_are_refused(api: httpx.Client, number: bytes) -> None:
    t = create(api)
    body = b'{"content": [{"type": "data", "value": ' + number + b"}]}"
    r = api.post(f"/tasks/{t['id']}/messages", content=body, headers={"content-type": "application/json"})
    assert_error(r, 400, "content:", "not a JSON number")


def test_stored_content_always_reads_back(api: httpx.Client, db_url: str) -> None:
    """Values the API refuses may already be in a database (written before, or by an executor): the task,
    its messages and the list still answer, with the values intact."""
    t = create(api)
    content = [{"type": "data", "big": 2**70, "small": -(2**80), "deep": nested(300)}]

    async def store_it(store):
        await store.add_message(t["id"], content, requeue=False)

    with_store(db_url, store_it)
    r = api.get(f"/tasks/{t['id']}")
    assert r.status_code == 200, r.text[:300]
    intact = r.json()["messages"][-1]["content"] == content  # (pytest cannot print 300 levels)
    assert intact
    r = api.get(f"/tasks/{t['id']}/messages")
    intact = r.status_code == 200 and r.json()[-1]["content"] == content
    assert intact
    assert api.get("/tasks").status_code == 200


def test_delete_answers_204_and_removes_everything(api: httpx.Client) -> None:
    t = create(api, files=[{"name": "a.txt", "data": "aGk="}])
    api.post(f"/tasks/{t['id']}/messages", json={"content": "more"})
    r = api.delete(f"/tasks/{t['id']}")
    assert r.status_code == 204 and r.content == b""
    assert_error(api.get(f"/tasks/{t['id']}"), 404)
    assert api.get("/tasks").headers["x-total-count"] == "0"


def test_takeover_and_resume_switch_control(api: httpx.Client) -> None:
    t = create(api)
    r = api.post(f"/tasks/{t['id']}/takeover")
    assert r.status_code == 200 and r.json()["control"] == "USER"
    r = api.post(f"/tasks/{t['id']}/resume")
    assert r.status_code == 200 and r.json()["control"] == "ASSISTANT"
    api.patch(f"/tasks/{t['id']}", json={"status": "CANCELLED"})
    assert_error(api.post(f"/tasks/{t['id']}/takeover"), 400, "CANCELLED")


def test_models_is_an_empty_list_without_the_agent_loop(db_url: str) -> None:
    with serve(db_url, UnavailableExecutor()) as api:
        r = api.get("/tasks/models")
    assert r.status_code == 200 and r.json() == []


def test_unknown_routes_and_methods_use_the_error_shape(api: httpx.Client) -> None:
    assert_error(api.get("/nothing/here"), 404, "Cannot GET /nothing/here")
    assert_error(api.put("/tasks"), 405, "PUT")
    assert_error(api.post("/tasks/in-progress/x/y"), 404)


def test_openapi_and_docs_are_served(api: httpx.Client) -> None:
    assert api.get("/docs").status_code == 200
    spec = api.get("/openapi.json").json()
    assert {"/tasks", "/tasks/{task_id}", "/tasks/{task_id}/messages", "/tasks/models"} <= set(spec["paths"])
    content = spec["paths"]["/tasks"]["post"]["requestBody"]["content"]
    assert {"application/json", "multipart/form-data"} == set(content)
    assert "TaskCreate" in spec["components"]["schemas"]


class _WithModels:
    async def execute(self, task_id, ctx) -> None:  # pragma: no cover - never run here
        raise AssertionError

    async def models(self) -> list[dict]:
        return [{"provider": "anthropic", "name": "m1", "title": "Model One", "contextWindow": 200000}]


def test_models_come_from_the_executor_when_it_lists_them(db_url: str) -> None:
    with serve(db_url, _WithModels()) as api:
        assert api.get("/tasks/models").json() == [
            {"provider": "anthropic", "name": "m1", "title": "Model One", "contextWindow": 200000}
        ]
