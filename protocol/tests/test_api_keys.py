"""protocol.api_keys.ApiKey, the one place an API key is a number, agrees with kio's table."""

from kio.index import api_key_map

from kafkalite.protocol.api_keys import ApiKey


def test_every_api_key_is_kios_number_for_its_name() -> None:
    assert {key.name.lower(): int(key) for key in ApiKey} == {
        name: number for number, name in api_key_map.items() if name.upper() in ApiKey.__members__}
    assert len(ApiKey) == 8
