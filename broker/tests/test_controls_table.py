import pytest
import trio

from kafkalite.broker import controls
from kafkalite.broker.controls import ControlError, control, invoke


def test_invoke_checks_arguments_against_the_signature():
    seen = []

    @control("test-echo")
    async def echo(broker, *, text: str, times: int = 1):
        seen.append(broker)
        return text * times

    try:
        assert trio.run(invoke, "B", "test-echo", {"text": "ab", "times": 2}) == "abab"
        assert seen == ["B"]
        with pytest.raises(ControlError, match="needs text"):
            trio.run(invoke, "B", "test-echo", {})
        with pytest.raises(ControlError, match="no argument"):
            trio.run(invoke, "B", "test-echo", {"text": "x", "colour": 1})
        with pytest.raises(ControlError, match="no control named"):
            trio.run(invoke, "B", "test-no-such", {})
        with pytest.raises(ValueError):
            control("test-echo")(echo)
    finally:
        controls.CONTROLS.pop("test-echo", None)
