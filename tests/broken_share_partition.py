"""A share-group model broken on purpose, for the share-partition oracle's test: a release at the
delivery limit makes the record AVAILABLE again instead of archiving it."""

from __future__ import annotations

from kmc.models.share_group.model import ShareGroupModel
from kmc.models.share_group.state import ARCHIVED, AVAILABLE, RELEASE, ShareGroupState


class ReleaseIgnoresTheLimit(ShareGroupModel):
    def _acknowledge(self, s: ShareGroupState, c: int, offset: int, ack_type: str):  # type: ignore[no-untyped-def]
        action, after = super()._acknowledge(s, c, offset, ack_type)
        record = after.records[offset]
        if ack_type == RELEASE and record.state == ARCHIVED and record.rollback is not None:
            records = (*after.records[:offset], record._replace(state=AVAILABLE), *after.records[offset + 1 :])
            after = after._replace(records=records)
        return action, after
