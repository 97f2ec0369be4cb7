/* The kraft-replication C successors: metadata, crashes and the controller (_apply_metadata, _crash,
 * _unfence, _fence, _handle_alter_partition); what the controller decides is read from the model's
 * controller_changes memo, and the Python runs when it is not there yet. */
#include "kraft_replication.h"

static PyObject *controller_item(const View *v, int field) { return Py_NewRef(PyTuple_GET_ITEM(v->controller, field)); }

int kr_apply_metadata(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    PyObject *updated;
    if (v->c_leader == b) {
        int same_epoch = r->leader == b && r->leaderEpoch == v->c_leaderEpoch;
        if (same_epoch && r->partitionEpoch == v->c_partitionEpoch && r->isr == v->c_isr) {
            return 0;
        }
        PyObject *items[R_SIZE];
        long fs_leo[MAX_BROKERS];
        load(r->obj, items, R_SIZE);
        set(items, R_PARTITION_EPOCH, controller_item(v, C_PARTITION_EPOCH));
        set(items, R_ISR, controller_item(v, C_ISR));
        set(items, R_PENDING_ALTER_PARTITION, Py_NewRef(Py_None));
        set(items, R_ASSIGNMENT, controller_item(v, C_REPLICAS));
        if (same_epoch) {
            /* a replica that left the assignment leaves remoteReplicasMap */
            PyObject *followers = PyTuple_New(v->n);
            if (followers == NULL) {
                set(items, R_FOLLOWER_STATE, NULL);
            } else {
                PyObject *old = PyTuple_GET_ITEM(r->obj, R_FOLLOWER_STATE);
                for (int i = 0; i < v->n; i++) {
                    int kept = (v->c_replicas & (1u << i)) != 0;
                    PyTuple_SET_ITEM(followers, i, Py_NewRef(kept ? PyTuple_GET_ITEM(old, i)
                                                                  : PyTuple_GET_ITEM(c->unknown_followers, i)));
                    fs_leo[i] = kept ? r->fs_leo[i] : UNDEFINED;
                }
                set(items, R_FOLLOWER_STATE, followers);
            }
        } else {
            /* makeLeader: a new epoch starts at the LEO; nothing is known of the followers yet */
            set(items, R_LEADER, num(b));
            set(items, R_LEADER_EPOCH, controller_item(v, C_LEADER_EPOCH));
            set(items, R_FOLLOWER_STATE, Py_NewRef(c->unknown_followers));
            set(items, R_FETCH_STATE, Py_NewRef(c->strings[STR_FETCHING]));
            set(items, R_HOSTED, Py_NewRef(Py_True));
            for (int i = 0; i < MAX_BROKERS; i++) {
                fs_leo[i] = UNDEFINED;
            }
        }
        long hw = kr_incremented_hw(c, b, r->hw, r->len, v->c_isr, 0, 0, fs_leo);
        if (hw != r->hw) {
            set(items, R_HIGH_WATERMARK, num(hw));
        }
        updated = tuples_new_named(c->replica_type, R_SIZE, items);
    } else if (!(v->c_replicas & (1u << b))) {
        return r->hosted ? kr_call_broker(c, v, out, CB_APPLY_METADATA, b) : 0;
    } else {
        if (r->leader == v->c_leader && r->leaderEpoch == v->c_leaderEpoch && r->hosted) {
            return 0;
        }
        PyObject *log = c->ints[I_TRUNCATION] == TRUNC_HW ? kr_head(r->log, r->hw) : Py_NewRef(r->log);
        int truncating = c->ints[I_TRUNCATION] == TRUNC_OFFSETS_FOR_LEADER_EPOCH && log != NULL &&
                         PyTuple_GET_SIZE(log) > 0;
        PyObject *items[R_SIZE];
        load(r->obj, items, R_SIZE);
        set(items, R_LOG, log);
        set(items, R_LEADER, controller_item(v, C_LEADER));
        set(items, R_LEADER_EPOCH, controller_item(v, C_LEADER_EPOCH));
        set(items, R_PARTITION_EPOCH, num(UNDEFINED));
        set(items, R_ISR, kr_mask_set(0));
        set(items, R_PENDING_ALTER_PARTITION, Py_NewRef(Py_None));
        set(items, R_FOLLOWER_STATE, Py_NewRef(c->unknown_followers));
        set(items, R_FETCH_STATE, Py_NewRef(c->strings[truncating ? STR_TRUNCATING : STR_FETCHING]));
        set(items, R_HOSTED, Py_NewRef(Py_True));
        set(items, R_ASSIGNMENT, PyTuple_New(0));
        updated = tuples_new_named(c->replica_type, R_SIZE, items);
    }
    return tuples_emit(out, act1(c, A_APPLY_METADATA, b), kr_dense(c, v, kr_update_replica(c, v, b, updated)));
}

/* _drop_fetches: a stopped broker's own fetch and every fetch sent to it are gone. */
static PyObject *drop_fetches(const View *v, int b) {
    PyObject *fetches = PyTuple_New(v->n);
    if (fetches == NULL) {
        return NULL;
    }
    for (int f = 0; f < v->n; f++) {
        const Msg *m = &v->m[f];
        int dropped = f == b || (m->kind != MSG_NONE && m->leader == b);
        PyTuple_SET_ITEM(fetches, f, Py_NewRef(dropped ? Py_None : m->obj));
    }
    return fetches;
}

int kr_crash(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    long leo = (long)r->len, first = 0, last = leo;
    if (c->ints[I_CRASH] == CRASH_PROCESS) {
        first = leo;
    } else if (c->ints[I_CRASH] == CRASH_DISK) {
        last = 0;
    }
    for (long keep = first; keep <= last; keep++) {
        PyObject *replica_items[R_SIZE] = {
            [R_RUNNING] = Py_NewRef(Py_False),
            [R_BROKER_EPOCH] = Py_NewRef(PyTuple_GET_ITEM(r->obj, R_BROKER_EPOCH)),
            [R_CLEAN_SHUTDOWN_EPOCH] = num(UNDEFINED),
            [R_LOG] = kr_head(r->log, keep),
            [R_HIGH_WATERMARK] = num(r->hw < keep ? r->hw : keep),
            [R_LEADER] = num(NO_LEADER),
            [R_LEADER_EPOCH] = num(UNDEFINED),
            [R_PARTITION_EPOCH] = num(UNDEFINED),
            [R_ISR] = kr_mask_set(0),
            [R_PENDING_ALTER_PARTITION] = Py_NewRef(Py_None),
            [R_FOLLOWER_STATE] = Py_NewRef(c->unknown_followers),
            [R_FETCH_STATE] = Py_NewRef(c->strings[STR_FETCHING]),
            [R_HOSTED] = Py_NewRef(Py_True),
            [R_ASSIGNMENT] = PyTuple_New(0),
        };
        PyObject *down = tuples_new_named(c->replica_type, R_SIZE, replica_items);
        PyObject *items[S_SIZE];
        load(v->state, items, S_SIZE);
        set(items, S_FETCHES, drop_fetches(v, b));
        set(items, S_CRASHES, num(v->crashes + 1));
        if (tuples_emit(out, act2(c, A_CRASH, b, keep), kr_dense(c, v, kr_update(c, v, b, down, items))) < 0) {
            return -1;
        }
    }
    return 0;
}

/* controller_changes[(name, c, arg)]: borrowed, or NULL when not computed yet (or on an error). */
static PyObject *remembered_as(const Context *c, const View *v, PyObject *name, PyObject *arg) {
    PyObject *key = PyTuple_Pack(3, name, v->controller, arg);
    if (key == NULL) {
        return NULL;
    }
    PyObject *changed = PyDict_GetItemWithError(c->changes, key);
    Py_DECREF(key);
    return changed;
}

static PyObject *remembered(const Context *c, const View *v, PyObject *name, int b) {
    PyObject *id = num(b);
    if (id == NULL) {
        return NULL;
    }
    PyObject *changed = remembered_as(c, v, name, id);
    Py_DECREF(id);
    return changed;
}

static PyObject *with_controller(const Context *c, const View *v, PyObject *controller, long fences) {
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_CONTROLLER, Py_NewRef(controller));
    if (fences >= 0) {
        set(items, S_FENCES, num(fences));
    }
    return tuples_new_named(c->state_type, S_SIZE, items);
}

int kr_unfence(const Context *c, const View *v, int b, PyObject *out) {
    if (!(v->c_fenced & (1u << b)) || v->r[b].brokerEpoch != v->c_brokerEpochs[b]) {
        return 0;
    }
    PyObject *unfenced = remembered(c, v, c->unfence_key, b);
    if (unfenced == NULL) {
        return PyErr_Occurred() ? -1 : kr_call_broker(c, v, out, CB_UNFENCE, b);
    }
    if (unfenced == Py_None) {
        return 0;
    }
    return tuples_emit(out, act1(c, A_UNFENCE, b), kr_dense(c, v, with_controller(c, v, unfenced, -1)));
}

int kr_fence(const Context *c, const View *v, int b, PyObject *out) {
    PyObject *fenced = remembered(c, v, c->fence_key, b);
    if (fenced == NULL) {
        return PyErr_Occurred() ? -1 : kr_call_broker(c, v, out, CB_FENCE, b);
    }
    if (fenced == Py_None) {
        return 0;
    }
    long fences = v->r[b].running ? v->fences + 1 : -1;
    return tuples_emit(out, act1(c, A_FENCE, b), kr_dense(c, v, with_controller(c, v, fenced, fences)));
}

/* The leader's replica with its request's sentTo changed (the request kept otherwise). */
static PyObject *with_sent_to(const Context *c, const Rep *r, long sentTo) {
    PyObject *request = PyTuple_GET_ITEM(r->obj, R_PENDING_ALTER_PARTITION);
    PyObject *items[AP_SIZE] = {[AP_ISR] = Py_NewRef(PyTuple_GET_ITEM(request, AP_ISR)),
                                [AP_BROKER_EPOCHS] = Py_NewRef(PyTuple_GET_ITEM(request, AP_BROKER_EPOCHS)),
                                [AP_SENT_TO] = num(sentTo)};
    int fields[1] = {R_PENDING_ALTER_PARTITION};
    PyObject *values[1] = {tuples_new_named(c->alter_partition_type, AP_SIZE, items)};
    return kr_replica_with(c, r, 1, fields, values);
}

/* ReplicationControlManager.alterPartition and the leader handling the answer (the controller's
 * side of a commit is remembered in controller_changes; when it is not yet, the Python runs). */
int kr_handle_alter_partition(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    PyObject *action = act1(c, A_HANDLE_ALTER_PARTITION, b);
    if (r->pending_sentTo != v->failovers) {
        /* NOT_CONTROLLER: the same request is sent again to the active controller */
        return tuples_emit(out, action, kr_dense(c, v, kr_update_replica(c, v, b, with_sent_to(c, r, v->failovers))));
    }
    int error = ERR_NONE;
    PyObject *request = PyTuple_GET_ITEM(r->obj, R_PENDING_ALTER_PARTITION);
    if (v->c_leader != b || v->c_leaderEpoch != r->leaderEpoch) {
        error = ERR_FENCED_LEADER_EPOCH;
    } else if (v->c_partitionEpoch != r->partitionEpoch) {
        error = -1; /* INVALID_UPDATE_VERSION */
    } else if (r->pending_isr & ~v->c_isr & v->c_fenced) {
        error = -2; /* INELIGIBLE_REPLICA */
    } else {
        PyObject *epochs = PyTuple_GET_ITEM(request, AP_BROKER_EPOCHS);
        if (!PyTuple_Check(epochs)) {
            return 1;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(epochs) && error == ERR_NONE; i++) {
            long id, epoch;
            int status;
            if ((status = read_pair(PyTuple_GET_ITEM(epochs, i), &id, &epoch)) != 0) {
                return status;
            }
            if (id < 0 || id >= v->n) {
                return 1;
            }
            if (epoch != v->c_brokerEpochs[id]) {
                error = -3; /* STALE_BROKER_EPOCH */
            }
        }
    }
    if (error == ERR_NONE) {
        PyObject *committed = remembered_as(c, v, c->commit_key, PyTuple_GET_ITEM(request, AP_ISR));
        if (committed == NULL) {
            return PyErr_Occurred() ? -1 : kr_call_broker(c, v, out, CB_HANDLE_ALTER_PARTITION, b);
        }
        if (committed == Py_None) {
            return 0; /* a leader epoch bump past the bound */
        }
        long leader;
        unsigned isr;
        int status;
        if (!PyTuple_Check(committed) || PyTuple_GET_SIZE(committed) != C_SIZE) {
            return 1;
        }
        if ((status = tuples_read_long(PyTuple_GET_ITEM(committed, C_LEADER), &leader)) != 0 ||
            (status = kr_read_mask(PyTuple_GET_ITEM(committed, C_ISR), v->n, &isr)) != 0) {
            return status;
        }
        PyObject *updated;
        if (leader != b) {
            /* a completed reassignment removed this leader: it keeps its maximal ISR */
            updated = with_sent_to(c, r, AWAITING_METADATA);
        } else {
            long hw = kr_incremented_hw(c, b, r->hw, r->len, isr, 0, 0, r->fs_leo);
            int fields[4] = {R_PARTITION_EPOCH, R_ISR, R_PENDING_ALTER_PARTITION, R_HIGH_WATERMARK};
            PyObject *values[4] = {Py_NewRef(PyTuple_GET_ITEM(committed, C_PARTITION_EPOCH)),
                                   Py_NewRef(PyTuple_GET_ITEM(committed, C_ISR)), Py_NewRef(Py_None), num(hw)};
            updated = kr_replica_with(c, r, hw == r->hw ? 3 : 4, fields, values);
            if (hw == r->hw) {
                Py_XDECREF(values[3]);
            }
        }
        PyObject *items[S_SIZE];
        load(v->state, items, S_SIZE);
        set(items, S_CONTROLLER, Py_NewRef(committed));
        return tuples_emit(out, action, kr_dense(c, v, kr_update(c, v, b, updated, items)));
    }
    PyObject *updated;
    if ((error == ERR_FENCED_LEADER_EPOCH || error == -1) && c->ints[I_AWAITS_METADATA]) {
        /* the request may have been applied by a controller whose answer was lost */
        updated = with_sent_to(c, r, AWAITING_METADATA);
    } else {
        int fields[1] = {R_PENDING_ALTER_PARTITION};
        PyObject *values[1] = {Py_NewRef(Py_None)};
        updated = kr_replica_with(c, r, 1, fields, values);
    }
    return tuples_emit(out, action, kr_dense(c, v, kr_update_replica(c, v, b, updated)));
}

