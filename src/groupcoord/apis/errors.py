"""Handler-level errors.

`ApiError(code)` raised inside a handler becomes the error code of the response (the
handler module's `error_response`, or the response's top-level `error_code`), as Kafka's
`AbstractRequest.getErrorResponse(Throwable)` does. A malformed request is not an ApiError:
it closes the connection.
"""

from __future__ import annotations


class ApiError(Exception):
    """An error answered to the client as a Kafka error code."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or f"error code {int(code)}")
        self.code = int(code)
        self.message = message
