/* The kraft-replication C successors: the leader's steps (model.py's _produce,
 * _shrink_isr, _expand_isr and _handle_fetch). */
#include "kraft_replication.h"

int kr_produce(const Context *c, const View *v, int b, PyObject *out) {
    if (v->nextRecordId > c->ints[I_MAX_RECORDS]) {
        return 0;
    }
    const Rep *r = &v->r[b];
    if (c->ints[I_ACKS] == ACKS_ALL && popcount(r->isr) < c->ints[I_MIN_ISR]) {
        return 0;
    }
    long rid = v->nextRecordId;
    Py_ssize_t len = r->len;
    PyObject *log = PyTuple_New(len + 1);
    if (log == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyTuple_SET_ITEM(log, i, Py_NewRef(PyTuple_GET_ITEM(r->log, i)));
    }
    PyObject *record_items[REC_SIZE] = {[REC_ID] = num(rid), [REC_EPOCH] = num(r->leaderEpoch)};
    PyObject *record = tuples_new_named(c->record_type, REC_SIZE, record_items);
    if (record == NULL) {
        Py_DECREF(log);
        return -1;
    }
    PyTuple_SET_ITEM(log, len, record);
    long hw = kr_incremented_hw(c, b, r->hw, len + 1, r->isr, r->has_pending, r->pending_isr, r->fs_leo);
    int fields[2] = {R_LOG, R_HIGH_WATERMARK};
    PyObject *values[2] = {log, num(hw)};
    PyObject *replica = kr_replica_with(c, r, 2, fields, values);
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_NEXT_RECORD_ID, num(rid + 1));
    PyObject *next = kr_update(c, v, b, replica, items);
    if (next != NULL && c->ints[I_ACKS] == ACKS_1) {
        PyObject *acked = PyFrozenSet_New(PyTuple_GET_ITEM(next, S_ACKED));
        PyObject *id = num(rid);
        if (acked == NULL || id == NULL || PySet_Add(acked, id) < 0) {
            Py_XDECREF(acked);
            Py_XDECREF(id);
            Py_DECREF(next);
            return -1;
        }
        Py_DECREF(id);
        PyObject *with_acked = tuples_put(next, S_ACKED, acked);
        Py_DECREF(next);
        if (with_acked == NULL) {
            return -1;
        }
        /* put made a plain tuple: give it the state's type */
        PyObject *state_items[S_SIZE];
        load(with_acked, state_items, S_SIZE);
        Py_DECREF(with_acked);
        next = tuples_new_named(c->state_type, S_SIZE, state_items);
    }
    return tuples_emit(out, act2(c, A_PRODUCE, b, rid), next);
}

/* The leader's AlterPartition proposal: the replica with a pending request (and maybe a new HW). */
static PyObject *proposed(const Context *c, const View *v, const Rep *r, unsigned isr, PyObject *epochs, long hw) {
    PyObject *isr_obj = kr_mask_set(isr);
    PyObject *request_items[AP_SIZE] = {[AP_ISR] = isr_obj, [AP_BROKER_EPOCHS] = epochs,
                                        [AP_SENT_TO] = Py_NewRef(PyTuple_GET_ITEM(v->state, S_FAILOVERS))};
    PyObject *request = tuples_new_named(c->alter_partition_type, AP_SIZE, request_items);
    if (hw == r->hw) {
        int fields[1] = {R_PENDING_ALTER_PARTITION};
        PyObject *values[1] = {request};
        return kr_replica_with(c, r, 1, fields, values);
    }
    int fields[2] = {R_PENDING_ALTER_PARTITION, R_HIGH_WATERMARK};
    PyObject *values[2] = {request, num(hw)};
    return kr_replica_with(c, r, 2, fields, values);
}

int kr_shrink_isr(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    if (r->has_pending) {
        return 0;
    }
    unsigned lagging = 0;
    for (int f = 0; f < v->n; f++) {
        if ((r->isr & (1u << f)) && f != b && r->fs_leo[f] < (long)r->len) {
            lagging |= 1u << f;
        }
    }
    /* Every nonempty set of lagging followers, smallest first, then by mask (out_of_sync_sets). */
    for (int size = 1; size <= v->n; size++) {
        for (unsigned mask = 1; mask < (1u << v->n); mask++) {
            if ((mask & ~lagging) || __builtin_popcount(mask) != size) {
                continue;
            }
            unsigned isr = r->isr & ~mask;
            long hw = kr_incremented_hw(c, b, r->hw, r->len, r->isr, 1, isr, r->fs_leo);
            PyObject *replica = proposed(c, v, r, isr, PyTuple_New(0), hw);
            if (tuples_emit(out, act2(c, A_SHRINK_ISR, b, mask), kr_update_replica(c, v, b, replica)) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

int kr_expand_isr(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    if (r->has_pending) {
        return 0;
    }
    long leso = 0;
    if (c->ints[I_ISR_EXPAND_LESO]) {
        leso = (long)r->len;
        for (Py_ssize_t offset = 0; offset < r->len; offset++) {
            if (r->epoch[offset] >= r->leaderEpoch) {
                leso = (long)offset;
                break;
            }
        }
    }
    for (int i = 0; i < r->nassignment; i++) {
        int f = r->assignment[i];
        if (f == b || (r->isr & (1u << f))) {
            continue;
        }
        long leo = r->fs_leo[f];
        if (leo < r->hw || leo < leso) {
            continue;
        }
        PyObject *epochs;
        if (c->ints[I_ISR_BROKER_EPOCH]) {
            PyObject *entry = kr_pair(num(f), num(r->fs_epoch[f]));
            epochs = entry == NULL ? NULL : PyTuple_Pack(1, entry);
            Py_XDECREF(entry);
        } else {
            epochs = PyTuple_New(0);
        }
        PyObject *replica = proposed(c, v, r, r->isr | (1u << f), epochs, r->hw);
        if (tuples_emit(out, act2(c, A_EXPAND_ISR, b, f), kr_update_replica(c, v, b, replica)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* _epoch_error: leadership, then (KIP-320) the epoch; -1 for none. */
static int epoch_error(const Context *c, const Rep *leader, int leader_id, long current_leader_epoch) {
    if (leader->leader != leader_id) {
        return ERR_NOT_LEADER_OR_FOLLOWER;
    }
    if (c->ints[I_FETCH_FENCING] && current_leader_epoch != leader->leaderEpoch) {
        return current_leader_epoch < leader->leaderEpoch ? ERR_FENCED_LEADER_EPOCH : ERR_UNKNOWN_LEADER_EPOCH;
    }
    return -1;
}

static PyObject *fetch_response(const Context *c, int leader, long leaderEpoch, long fetchOffset, int error,
                                PyObject *records, long hw, long diverging_epoch, long diverging_end,
                                Py_ssize_t leo) {
    PyObject *items[FRESP_SIZE] = {[FRESP_LEADER] = num(leader),
                                   [FRESP_LEADER_EPOCH] = num(leaderEpoch),
                                   [FRESP_FETCH_OFFSET] = num(fetchOffset),
                                   [FRESP_ERROR] = Py_NewRef(c->strings[error]),
                                   [FRESP_RECORDS] = records,
                                   [FRESP_HIGH_WATERMARK] = num(hw),
                                   [FRESP_DIVERGING_EPOCH] = kr_pair(num(diverging_epoch), num(diverging_end)),
                                   [FRESP_LOG_END_OFFSET] = PyLong_FromSsize_t(leo)};
    return tuples_new_named(c->fetch_response_type, FRESP_SIZE, items);
}

/* The leader recording a follower's fetch: its follower state and maybe a new HW. */
static PyObject *leader_after_fetch(const Context *c, const Rep *l, int leader_id, int f, long fetchOffset,
                                    PyObject *replicaEpoch, long *hw) {
    PyObject *fs_old = PyTuple_GET_ITEM(l->obj, R_FOLLOWER_STATE);
    PyObject *followers = tuples_put(fs_old, f, kr_pair(num(fetchOffset), Py_NewRef(replicaEpoch)));
    long fs_leo[MAX_BROKERS];
    for (int i = 0; i < MAX_BROKERS; i++) {
        fs_leo[i] = i == f ? fetchOffset : l->fs_leo[i];
    }
    *hw = kr_incremented_hw(c, leader_id, l->hw, l->len, l->isr, l->has_pending, l->pending_isr, fs_leo);
    if (*hw == l->hw) {
        int fields[1] = {R_FOLLOWER_STATE};
        PyObject *values[1] = {followers};
        return kr_replica_with(c, l, 1, fields, values);
    }
    int fields[2] = {R_FOLLOWER_STATE, R_HIGH_WATERMARK};
    PyObject *values[2] = {followers, num(*hw)};
    return kr_replica_with(c, l, 2, fields, values);
}

int kr_handle_fetch(const Context *c, const View *v, int f, PyObject *out) {
    PyObject *req = v->m[f].obj;
    int leader_id = (int)v->m[f].leader;
    const Rep *l = &v->r[leader_id];
    if (!l->running) {
        return 0;
    }
    if (PyTuple_GET_SIZE(req) != FREQ_SIZE) {
        return 1;
    }
    long fetchOffset, lastFetchedEpoch, currentLeaderEpoch;
    int status;
    if ((status = tuples_read_long(PyTuple_GET_ITEM(req, FREQ_FETCH_OFFSET), &fetchOffset)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(req, FREQ_LAST_FETCHED_EPOCH), &lastFetchedEpoch)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(req, FREQ_CURRENT_LEADER_EPOCH), &currentLeaderEpoch)) != 0) {
        return status;
    }
    PyObject *replicaEpoch = PyTuple_GET_ITEM(req, FREQ_REPLICA_EPOCH);
    PyObject *action = act2(c, A_HANDLE_FETCH, leader_id, f);
    int error = epoch_error(c, l, leader_id, currentLeaderEpoch);
    if (error < 0 && !(l->assignment_mask & (1u << f))) {
        error = ERR_NOT_LEADER_OR_FOLLOWER;
    }
    if (error < 0 && c->ints[I_TRUNCATION] == TRUNC_DIVERGING_EPOCH && fetchOffset > 0) {
        long epoch, end;
        kr_end_offset_for_epoch(l->len, l->epoch, lastFetchedEpoch, l->leaderEpoch, &epoch, &end);
        if (end < fetchOffset || epoch < lastFetchedEpoch) {
            PyObject *response = fetch_response(c, leader_id, currentLeaderEpoch, fetchOffset, ERR_DIVERGING_EPOCH,
                                                PyTuple_New(0), UNDEFINED, epoch, end, l->len);
            if (c->ints[I_DIVERGING_FETCH_NOT_COUNTED]) {
                return tuples_emit(out, action, kr_with_fetch(c, v, f, response));
            }
            long hw;
            PyObject *updated = leader_after_fetch(c, l, leader_id, f, fetchOffset, replicaEpoch, &hw);
            PyObject *items[S_SIZE];
            load(v->state, items, S_SIZE);
            set(items, S_FETCHES, tuples_put(v->fetches, f, response));
            return tuples_emit(out, action, kr_update(c, v, leader_id, updated, items));
        }
    } else if (error < 0 && fetchOffset > (long)l->len) {
        error = ERR_OFFSET_OUT_OF_RANGE;
    }
    if (error >= 0) {
        PyObject *response = fetch_response(c, leader_id, currentLeaderEpoch, fetchOffset, error, PyTuple_New(0),
                                            UNDEFINED, UNDEFINED, UNDEFINED, l->len);
        return tuples_emit(out, action, kr_with_fetch(c, v, f, response));
    }
    long hw;
    PyObject *updated = leader_after_fetch(c, l, leader_id, f, fetchOffset, replicaEpoch, &hw);
    PyObject *response = fetch_response(c, leader_id, currentLeaderEpoch, fetchOffset, ERR_NONE,
                                        kr_tail(l->log, fetchOffset), hw, UNDEFINED, UNDEFINED, l->len);
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_FETCHES, tuples_put(v->fetches, f, response));
    return tuples_emit(out, action, kr_update(c, v, leader_id, updated, items));
}

