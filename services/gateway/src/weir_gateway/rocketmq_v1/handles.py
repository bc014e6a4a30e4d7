"""Receipt handles, transaction ids and recall handles: opaque strings the gateway hands out and takes
back, signed with HMAC-SHA256 under the gateway's secret (`WEIR_GATEWAY_ROCKETMQ_RECEIPT_SECRET`, the
same on every instance, so a handle from one instance settles on another).

Format: `<payload>.<mac>`, both base64url without padding. The payload is a compact JSON array whose
first element names the kind, so one kind can never be passed off as another:

    receipt handle  ["r", stream, partition, seq, deliver_count, group]   (one delivery of one message)
    transaction id  ["t", stream, partition, seq, message_id]             (one held half message)
    recall handle   ["d", stream, partition, seq, message_id]             (one DELAY message's schedule
                                                                           record; RocketMQ 5's v2 only)

`mac` = the first MAC_BYTES of HMAC-SHA256(secret, payload bytes). A string that does not parse,
whose MAC does not verify, or that is of another kind is INVALID_ARGUMENT, as service.proto says of
AckMessage ("If the given receipt_handle is illegal or out of date, returns INVALID_ARGUMENT"). A
handle is as long-lived as the delivery it names: once the message is delivered again (its
deliver_count rose) or settled, the node answers not_pending and the gateway reports it stale.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import secrets
from dataclasses import dataclass

from weir.errors import InvalidArgumentError

logger = logging.getLogger(__name__)

MAC_BYTES = 16  # 128 bits of HMAC-SHA256: forging one takes ~2**128 tries
MAX_HANDLE_CHARS = 2048  # streams and groups are <= 128 characters, message ids <= 256 bytes
RECEIPT_KIND = "r"
TRANSACTION_KIND = "t"
RECALL_KIND = "d"


@dataclass(frozen=True, slots=True)
class Receipt:
    """One delivery: the message at `seq` of `partition` of `stream`, delivered for the
    `deliver_count`-th time (1-based) to the consumer of Weir group `group`."""

    stream: str
    partition: int
    seq: int
    deliver_count: int
    group: str


@dataclass(frozen=True, slots=True)
class Transaction:
    """One half message: the held record at `seq` of `partition` of `stream`, sent with `message_id`."""

    stream: str
    partition: int
    seq: int
    message_id: str


@dataclass(frozen=True, slots=True)
class Recall:
    """One DELAY message: its schedule record at `seq` of `partition` of `stream`, sent with
    `message_id` (what RecallMessage discards, and the id it answers)."""

    stream: str
    partition: int
    seq: int
    message_id: str


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    """Makes and checks receipt handles, transaction ids and recall handles under one secret
    (bytes, >= 16)."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the receipt secret needs at least 16 bytes")
        self._secret = secret

    @classmethod
    def from_setting(cls, secret: str) -> Signer:
        """The setting's secret (UTF-8), or a random one for this process when it is empty, with a
        warning: handles and transaction ids then only work on this instance, and not after a restart."""
        if secret:
            return cls(secret.encode("utf-8"))
        logger.warning(
            "WEIR_GATEWAY_ROCKETMQ_RECEIPT_SECRET is not set: RocketMQ receipt handles and transaction ids are "
            "signed with a random per-process secret and only work on this gateway instance until it restarts"
        )
        return cls(secrets.token_bytes(32))

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._secret, payload, hashlib.sha256).digest()[:MAC_BYTES]

    def _sign(self, fields: list[object]) -> str:
        payload = json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return f"{_encode(payload)}.{_encode(self._mac(payload))}"

    def _open(self, token: str, kind: str, what: str, arity: int) -> list[object]:
        """The fields of a signed token of `kind`. Errors: InvalidArgumentError (malformed, forged,
        or another kind)."""
        if not token:
            raise InvalidArgumentError(f"{what}: required")
        if len(token) > MAX_HANDLE_CHARS or token.count(".") != 1:
            raise InvalidArgumentError(f"{what}: malformed (not one this gateway issued)")
        payload_text, mac_text = token.split(".")
        try:
            payload, mac = _decode(payload_text), _decode(mac_text)
        except (binascii.Error, ValueError):
            raise InvalidArgumentError(f"{what}: malformed (not base64url)") from None
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise InvalidArgumentError(f"{what}: the signature does not verify (forged, or another cluster's)")
        fields = json.loads(payload)
        if not isinstance(fields, list) or len(fields) != arity or fields[0] != kind:
            raise InvalidArgumentError(f"{what}: not a {what} (another kind of token)")
        return fields

    def receipt_handle(self, receipt: Receipt) -> str:
        fields: list[object] = [RECEIPT_KIND, receipt.stream, receipt.partition, receipt.seq, receipt.deliver_count]
        return self._sign([*fields, receipt.group])

    def receipt(self, handle: str) -> Receipt:
        """The delivery a receipt handle names. Errors: InvalidArgumentError."""
        _, stream, partition, seq, deliver_count, group = self._open(handle, RECEIPT_KIND, "receipt_handle", 6)
        return Receipt(str(stream), int(str(partition)), int(str(seq)), int(str(deliver_count)), str(group))

    def transaction_id(self, transaction: Transaction) -> str:
        fields: list[object] = [TRANSACTION_KIND, transaction.stream, transaction.partition, transaction.seq]
        return self._sign([*fields, transaction.message_id])

    def transaction(self, transaction_id: str) -> Transaction:
        """The half message a transaction id names. Errors: InvalidArgumentError."""
        _, stream, partition, seq, message_id = self._open(transaction_id, TRANSACTION_KIND, "transaction_id", 5)
        return Transaction(str(stream), int(str(partition)), int(str(seq)), str(message_id))

    def recall_handle(self, recall: Recall) -> str:
        return self._sign([RECALL_KIND, recall.stream, recall.partition, recall.seq, recall.message_id])

    def recall(self, recall_handle: str) -> Recall:
        """The DELAY message a recall handle names. Errors: InvalidArgumentError (malformed, forged,
        or another kind of token)."""
        _, stream, partition, seq, message_id = self._open(recall_handle, RECALL_KIND, "recall_handle", 5)
        return Recall(str(stream), int(str(partition)), int(str(seq)), str(message_id))
