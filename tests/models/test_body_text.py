"""Bodies encoded with reused item texts are exactly the bodies encoded whole, call after call, and the
hash carried along with them is the hash of those bytes."""

from __future__ import annotations

import hashlib
import json
import threading

from mimo_core.models.body_text import BodyEncoder, WireLists

whole = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def test_reused_texts_give_the_same_bytes_as_encoding_the_whole_body() -> None:
    enc = BodyEncoder()
    history: list[dict] = []
    for n in range(30):
        history.append(
            {
                "role": "user" if n % 2 else "assistant",
                "content": f'step {n} ✓ "q" \\ \n',
                "n": n,
                "f": n / 3,
                "none": None,
                "nested": {"a": [1, -0.0, True]},
            }
        )
        if n == 20:
            history[:] = history[:5] + history[15:]  # trimmed: a new list keeping some of the same objects
        body = {"model": "m", "messages": list(history), "tools": [{"name": "bash"}], "temperature": 0.2}
        text = enc.encode(body)
        assert text == whole(body)
        assert text.sha1 == hashlib.sha1(whole(body).encode()).hexdigest()


def test_the_carried_hash_follows_every_change_before_inside_and_after_the_history() -> None:
    enc = BodyEncoder()
    history = [{"role": "user", "content": f"m{n} ✓"} for n in range(10)]
    bodies = [
        {"model": "m", "messages": history[:8], "temperature": 0.2},
        {"model": "m", "messages": history[:9], "temperature": 0.2},  # appended: carried on
        {"model": "m", "messages": history[:9], "temperature": 0.3},  # a field after the list changed
        {"model": "m2", "messages": history[:10], "temperature": 0.3},  # a field before it changed
        {"model": "m2", "messages": history[:10]},  # nothing new in the list
        {"model": "m2", "messages": [history[0], *history[2:10]]},  # an item dropped from the middle
        {"model": "m2", "input": history[:10]},  # another list key
        {"model": "m2", "messages": history[:3]},  # no long list at all
        {"model": "m2", "messages": history[:10], "tools": history[:9]},  # two long lists
        {"model": "m2", "messages": history[:10], "tools": history[:10]},
    ]
    for body in bodies:
        text = enc.encode(body)
        assert (text, text.sha1) == (whole(body), hashlib.sha1(whole(body).encode()).hexdigest()), body


def test_an_item_replaced_by_an_equal_looking_new_object_is_encoded_again() -> None:
    enc = BodyEncoder()
    items = [{"content": str(i)} for i in range(10)]
    enc.encode({"messages": items})
    changed = [*items[:9], {"content": "different"}]
    items[0] = {"content": "also different"}
    body = {"messages": [items[0], *changed[1:]]}
    assert enc.encode(body) == whole(body)


def test_threads_sharing_one_encoder_each_get_their_own_bytes() -> None:
    enc = BodyEncoder()
    failures: list[str] = []

    def rollout(tag: str) -> None:
        history: list[dict] = []
        for n in range(40):
            history.append({"role": tag, "content": f"{tag}-{n}"})
            body = {"model": tag, "messages": list(history)}
            if enc.encode(body) != whole(body):
                failures.append(f"{tag}@{n}")

    threads = [threading.Thread(target=rollout, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_bodies_with_non_string_keys_fall_back_to_plain_encoding() -> None:
    body = {1: "x", "messages": [{"a": 1}] * 10}
    assert BodyEncoder().encode(body) == whole(body)


def test_wire_lists_follow_the_history_appended_trimmed_and_rebuilt() -> None:
    from mimo_core.models.messages import Message

    wires = WireLists()
    history = [Message(role="user", content=f"m{i}") for i in range(3)]

    def convert(m: Message) -> dict:
        return {"role": m.role, "content": m.content}

    def expected(msgs: list[Message]) -> list[dict]:
        return [convert(m) for m in msgs]

    assert wires.build(history, "chat", convert) == expected(history)
    history.append(Message(role="assistant", content="a"))
    first = wires.build(history, "chat", convert)
    assert first == expected(history)
    first.append({"caller": "changed its copy"})
    trimmed = [history[0], history[3]]
    assert wires.build(trimmed, "chat", convert) == expected(trimmed)
    assert wires.build(history, "chat", convert) == expected(history)
    assert wires.build(history, "responses", lambda m: [convert(m), convert(m)], flatten=True) == [
        x for m in history for x in (convert(m), convert(m))
    ]
