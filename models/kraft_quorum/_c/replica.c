/* One replica's transitions in the kraft-quorum model's C successor function, the ones more than
 * one file makes: _unattached and _follower (kq_transition), _learn, the leader's high watermark
 * (_advance_hw), a leader's resignation (check-quorum's in successors.c, a removed leader's in
 * voters.c), and a Fetch with its response (a follower's in successors.c, an observer's in
 * voters.c). It calls only state.c. */
#include "kraft_quorum.h"

/* _unattached and _follower: a new role in ``epoch``, no vote, nothing volatile kept. */
void kq_transition(Val *x, int role, long epoch, long leader) {
    x->role = role;
    x->epoch = epoch;
    x->votedId = NONE;
    x->leaderId = leader;
    kq_set_votes(x, 0);
    kq_set_offsets_empty(x);
    x->hasFetched = 0;
    x->hwKnown = 0;
    x->orig = NULL;
}

/* _learn; whether ``x`` changed. */
int kq_learn(int v, Val *x, long epoch, long leader) {
    if (leader == v) {
        leader = NONE;
    }
    if (epoch > x->epoch) {
        kq_transition(x, leader != NONE ? FOLLOWER : UNATTACHED, epoch, leader);
        return 1;
    }
    if (epoch == x->epoch && leader != NONE && x->leaderId == NONE) {
        kq_transition(x, FOLLOWER, epoch, leader);
        return 1;
    }
    return 0;
}

/* LeaderState.maybeUpdateHighWatermark: over every replica's offset for a static voter set, else
 * over the leader's last voter set. */
void kq_advance_hw(const Context *c, const View *v, Val *x) {
    long sorted[MAX_VOTERS];
    int count = 0, rank = (int)c->majority - 1;
    const VSet *vs = c->static_voters ? NULL : kq_voters_of(c, v, x);
    for (int i = 0; i < x->noff; i++) { /* descending insertion sort */
        if (vs != NULL && !(vs->ids & (1u << i))) {
            continue;
        }
        int j = count++;
        while (j > 0 && sorted[j - 1] < x->off[i]) {
            sorted[j] = sorted[j - 1];
            j--;
        }
        sorted[j] = x->off[i];
    }
    if (vs != NULL) {
        rank = count / 2;
    }
    long offset = sorted[rank];
    if (offset <= x->hw) {
        return;
    }
    if (c->hw_needs_current_epoch && x->rec[offset - 1] != x->epoch) {
        return;
    }
    x->hw = offset;
    x->hwKnown = 1;
    x->orig = NULL;
}

/* The leader as Resigned (check-quorum, or removed from the voter set). */
int kq_resign(const Context *c, const View *v, PyObject *out, PyObject *action, int l) {
    Val x;
    kq_val_copy(&x, &v->v[l]);
    x.role = RESIGNED;
    x.orig = NULL;
    kq_set_offsets_empty(&x);
    x.hwKnown = 0;
    return kq_emit1(c, v, out, action, l, &x, NO_COUNTER, 0);
}

/* LeaderEpochFileCache.endOffsetFor. */
static void end_offset_for_epoch(const Val *x, long epoch, long *found, long *end) {
    *found = 0;
    *end = 0;
    for (Py_ssize_t o = 0; o < x->len && x->rec[o] <= epoch; o++) {
        *found = x->rec[o];
        *end = (long)o + 1;
    }
}

int kq_fetch(const Context *c, const View *v, PyObject *out, int f) {
    const Val *me = &v->v[f];
    int l = (int)me->leaderId;
    if (!connected(v->isolated, f, l)) {
        return 0;
    }
    const Val *leader = &v->v[l];
    PyObject *action = act2(c->fetch, f, l);
    Val x;
    kq_val_copy(&x, me);
    if (leader->role != LEADER || leader->epoch != me->epoch) {
        if (!kq_learn(f, &x, leader->epoch, leader->leaderId)) {
            kq_val_clear(&x);
            return 0;
        }
        return kq_emit1(c, v, out, action, f, &x, NO_COUNTER, 0);
    }
    Py_ssize_t fetch_offset = me->len;
    long last_epoch = me->len ? me->rec[me->len - 1] : 0, epoch, end;
    end_offset_for_epoch(leader, last_epoch, &epoch, &end);
    if (epoch != last_epoch || end < fetch_offset) { /* a diverging epoch: truncate */
        long local_epoch, local_end;
        end_offset_for_epoch(me, epoch, &local_epoch, &local_end);
        long truncate_to = local_epoch == epoch && end < local_end ? end : local_end;
        kq_set_log(&x, PyTuple_GetSlice(me->log, 0, truncate_to));
        x.len = truncate_to;
        x.hw = me->hw < truncate_to ? me->hw : truncate_to;
        x.hasFetched = 1;
        return kq_emit1(c, v, out, action, f, &x, NO_COUNTER, 0);
    }
    Val y;
    kq_val_copy(&y, leader);
    if (kq_counts_fetch(c, v, leader, f, me)) {
        kq_set_offset(&y, f, (long)fetch_offset);
        kq_advance_hw(c, v, &y);
    }
    Py_ssize_t take = leader->len - fetch_offset;
    if (c->fetch_max_records && take > c->fetch_max_records) {
        take = c->fetch_max_records;
    }
    long hw = y.hwKnown ? (y.hw < fetch_offset + take ? y.hw : (long)(fetch_offset + take)) : me->hw;
    if (take == 0 && hw == me->hw && me->hasFetched && y.orig != NULL) {
        kq_val_clear(&x);
        kq_val_clear(&y);
        return 0; /* nothing new on either side: the fetch waits in purgatory */
    }
    if (take > 0) {
        PyObject *log = PyTuple_New(fetch_offset + take);
        if (log != NULL) {
            for (Py_ssize_t o = 0; o < fetch_offset + take; o++) {
                PyObject *from = o < fetch_offset ? me->log : leader->log;
                PyTuple_SET_ITEM(log, o, Py_NewRef(PyTuple_GET_ITEM(from, o)));
            }
        }
        kq_set_log(&x, log);
        for (Py_ssize_t o = fetch_offset; o < fetch_offset + take; o++) {
            x.rec[o] = leader->rec[o];
            x.rvs[o] = leader->rvs[o];
        }
        x.len = fetch_offset + take;
    }
    if (hw != x.hw || !x.hasFetched) {
        x.hw = hw;
        x.hasFetched = 1;
        x.orig = NULL;
    }
    Change changes[2] = {{f, &x}, {l, &y}};
    int status = tuples_emit(out, action, kq_next_state(c, v, changes, 2, NO_COUNTER, 0));
    kq_val_clear(&x);
    kq_val_clear(&y);
    return status;
}
