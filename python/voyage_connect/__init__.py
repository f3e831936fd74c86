"""voyage-connect device SDK: a device's part of the voyage-connect contract.

- `UserTokens`: sign a user in (the helper flow, or RFC 8628) and keep their tokens fresh;
- `ClientCredentials`: the client's own tokens;
- `Subscriber`: the notification stream (protocol v2, server-sent events, v1);
- `MemoryStore`, `FileStore`: where tokens and the stream's position are kept;
- errors: every one a `VoyageError` with a `hint`.
"""

from ._version import __version__
from .client_credentials import ClientCredentials
from .connection import Notification, Reset
from .errors import (
    AccessDenied,
    Forbidden,
    InvalidClient,
    RequestRefused,
    ServiceUnavailable,
    SignInExpired,
    SignInRequired,
    VoyageError,
)
from .stores import FileStore, MemoryStore, Store
from .subscriber import Subscriber, TokenSource, Transport
from .user_tokens import DeviceCode, TokenResponse, UserTokens

__all__ = [
    "AccessDenied",
    "ClientCredentials",
    "DeviceCode",
    "FileStore",
    "Forbidden",
    "InvalidClient",
    "MemoryStore",
    "Notification",
    "RequestRefused",
    "Reset",
    "ServiceUnavailable",
    "SignInExpired",
    "SignInRequired",
    "Store",
    "Subscriber",
    "TokenResponse",
    "TokenSource",
    "Transport",
    "UserTokens",
    "VoyageError",
    "__version__",
]
