"""The errors the SDK raises: every one is a `VoyageError` whose `hint` says what to do.

Messages name the service's answer (status, OAuth error code, its description) and never a
secret or a token.
"""

from __future__ import annotations


class VoyageError(Exception):
    """Base of every error the SDK raises. `hint` says what to do about it."""

    hint: str = ""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    @property
    def message(self) -> str:
        """The error's text, without the hint."""
        return str(self.args[0]) if self.args else ""


class InvalidClient(VoyageError):
    """401 `invalid_client` (or 404 at the helper's configuration): the client id or secret is wrong."""

    hint = "check --client-id and VOYAGE_CLIENT_SECRET (client:show, client:rotate-secret)"


class SignInRequired(VoyageError):
    """No user tokens are stored, or a refresh answered `invalid_grant` (signed out, revoked, expired)."""

    hint = "sign the user in again"


class SignInExpired(VoyageError):
    """The helper's link or the device code expired before the user signed in."""

    hint = "start the sign-in again"


class AccessDenied(VoyageError):
    """The user denied the device on the verification page."""

    hint = "the user declined; start again only if they ask"


class Forbidden(VoyageError):
    """403: the client lacks the scope (or the grant) it asked for."""

    hint = "give the client the scope: client:update ID --scope …"


class ServiceUnavailable(VoyageError):
    """The service could not be reached, or kept answering 503 past the retry bound."""

    hint = "check the address (--api) and the network, and retry later"


class RequestRefused(VoyageError):
    """Any other refusal by the service, with its `status`, OAuth `error` and `description`."""

    hint = "the description says what was refused"

    def __init__(self, status: int, error: str | None, description: str | None, what: str = "request") -> None:
        self.status = status
        self.error = error
        self.description = description
        detail = ": ".join(part for part in (error, description) if part)
        super().__init__(f"{what} refused: HTTP {status}" + (f" {detail}" if detail else ""))
