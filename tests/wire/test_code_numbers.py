"""The plain-int tables the serve path uses before its listener is bound and the enums that
name them hold the same names and numbers: a code added to one and not the other fails here."""

from __future__ import annotations

from enum import IntEnum
from types import ModuleType

import pytest

from groupcoord.wire import api_key_numbers, error_code_numbers
from groupcoord.wire.api_keys import ApiKey
from groupcoord.wire.decode_error import DecodeError as DecodeErrorHome
from groupcoord.wire.errors import DecodeError, ErrorCode


def _constants(module: ModuleType) -> dict[str, int]:
    return {name: value for name, value in vars(module).items()
            if name.isupper() and type(value) is int}


@pytest.mark.parametrize(("enum", "numbers"), [(ErrorCode, error_code_numbers),
                                              (ApiKey, api_key_numbers)])
def test_every_number_is_a_member_of_the_same_name(enum: type[IntEnum],
                                                   numbers: ModuleType) -> None:
    members = {member.name: member.value for member in enum}
    assert members == _constants(numbers)
    assert len(set(members.values())) == len(members)  # no aliases


def test_error_codes_are_kafkas() -> None:
    assert error_code_numbers.UNKNOWN_SERVER_ERROR == -1
    assert error_code_numbers.NONE == 0
    assert error_code_numbers.NOT_COORDINATOR == 16
    assert error_code_numbers.CONTROLLER_ID_NOT_REGISTERED == 136
    assert ErrorCode(error_code_numbers.REBOOTSTRAP_REQUIRED) is ErrorCode.REBOOTSTRAP_REQUIRED


def test_version_facts_are_keyed_by_every_api_key() -> None:
    assert set(api_key_numbers.VERSIONS) == set(_constants(api_key_numbers).values())
    assert set(api_key_numbers.FLEXIBLE_MIN) == set(api_key_numbers.VERSIONS)
    assert api_key_numbers.VERSIONS[ApiKey.API_VERSIONS] == (0, 5)


def test_decode_error_is_one_class() -> None:
    assert DecodeError is DecodeErrorHome
