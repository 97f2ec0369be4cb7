/* KIP-853's steps in the kraft-quorum model's C successor function (voters.py): the leader's
 * AddVoter and RemoveVoter (a new VotersRecord, its voter set joining the state's table for the
 * step), a removed leader's resignation, and an observer's steps. A replica's voter set and who
 * counts in it are read in state.c; the transitions these steps make are replica.c's. */
#include "kraft_quorum.h"

/* -- voter changes, observers -------------------------------------------------------------------- */

/* _append_voters: the leader appends a VotersRecord of ``vs`` (its keys; the frozenset is made here). */
static int append_voters(const Context *c, const View *v, PyObject *out, PyObject *action, int l, VSet *vs,
                         int removed) {
    PyObject *set = PyFrozenSet_New(NULL);
    if (set == NULL) {
        return -1;
    }
    for (int k = 0; k < vs->k; k++) {
        PyObject *key = Py_BuildValue("(ll)", vs->id[k], vs->dir[k]);
        if (key == NULL || PySet_Add(set, key) < 0) {
            Py_XDECREF(key);
            Py_DECREF(set);
            return -1;
        }
        Py_DECREF(key);
    }
    const Val *leader = &v->v[l];
    PyObject *items[VR_SIZE] = {
        [VR_EPOCH] = PyLong_FromLong(leader->epoch),
        [VR_KIND] = Py_NewRef(c->voters_kind),
        [VR_VOTERS] = set,
    };
    PyObject *record = tuples_new_named(c->voters_record_type, VR_SIZE, items);
    if (record == NULL) {
        return -1;
    }
    Py_ssize_t n = leader->len;
    PyObject *log = PyTuple_New(n + 1);
    if (log == NULL) {
        Py_DECREF(record);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(log, i, Py_NewRef(PyTuple_GET_ITEM(leader->log, i)));
    }
    PyTuple_SET_ITEM(log, n, record);
    vs->obj = set; /* held by the log */
    Sets *sets = v->sets;
    sets->set[sets->count++] = *vs;
    Val x;
    kq_val_copy(&x, leader);
    kq_set_log(&x, log);
    x.rvs[x.len] = set;
    x.rec[x.len++] = x.epoch;
    kq_set_offset(&x, l, (long)x.len);
    if (removed >= 0 && removed != l) {
        kq_set_offset(&x, removed, 0);
    }
    kq_advance_hw(c, v, &x);
    int status = kq_emit1(c, v, out, action, l, &x, S_VOTER_CHANGES, 1);
    sets->count--;
    return status;
}

/* _voter_changes: AddVoter and RemoveVoter, handled by the leader. */
int kq_voter_changes(const Context *c, const View *v, PyObject *out, int l) {
    const Val *leader = &v->v[l];
    if (v->counters[S_VOTER_CHANGES] >= c->max_voter_changes || !leader->hwKnown) {
        return 0;
    }
    if (c->one_voter_change_at_a_time && kq_last_voters_offset(leader) >= leader->hw) {
        return 0;
    }
    const VSet *vs = kq_voters_of(c, v, leader);
    for (int o = 0; o < v->n; o++) {
        if ((vs->ids & (1u << o)) || !connected(v->isolated, l, o) || leader->off[o] != leader->len) {
            continue;
        }
        VSet added = *vs;
        int j = added.k++;
        while (j > 0 && added.id[j - 1] > o) {
            added.id[j] = added.id[j - 1];
            added.dir[j] = added.dir[j - 1];
            j--;
        }
        added.id[j] = o;
        added.dir[j] = v->v[o].directoryId;
        added.ids |= 1u << o;
        if (append_voters(c, v, out, act2(c->add_voter, l, o), l, &added, -1) < 0) {
            return -1;
        }
    }
    if (vs->k > 1) {
        for (int k = 0; k < vs->k; k++) {
            VSet less = {0};
            for (int i = 0; i < vs->k; i++) {
                if (i != k) {
                    less.id[less.k] = vs->id[i];
                    less.dir[less.k++] = vs->dir[i];
                    less.ids |= 1u << vs->id[i];
                }
            }
            int o = (int)vs->id[k];
            if (append_voters(c, v, out, act2(c->remove_voter, l, o), l, &less, o) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* _resign_removed: a leader no longer in its voter set resigns once that record is committed. */
int kq_resign_removed(const Context *c, const View *v, PyObject *out, int l) {
    const Val *leader = &v->v[l];
    if (c->static_voters || kq_is_voter(c, v, l, leader) || !leader->hwKnown) {
        return 0;
    }
    if (leader->hw > kq_last_voters_offset(leader)) {
        return kq_resign(c, v, out, act1(c->resign_removed, l), l);
    }
    return 0;
}

/* _discover: an observer with no leader to fetch from asks any voter it knows. */
static int discover(const Context *c, const View *v, PyObject *out, int o) {
    const Val *me = &v->v[o];
    if (me->role == FOLLOWER) {
        const Val *leader = &v->v[me->leaderId];
        if (connected(v->isolated, o, (int)me->leaderId) && leader->role == LEADER && leader->epoch == me->epoch) {
            return 0;
        }
    }
    unsigned ids = kq_voters_of(c, v, me)->ids;
    for (int w = 0; w < v->n; w++) {
        if (!(ids & (1u << w)) || w == o || !connected(v->isolated, o, w)) {
            continue;
        }
        Val x;
        kq_val_copy(&x, me);
        if (!kq_learn(o, &x, v->v[w].epoch, v->v[w].leaderId)) {
            kq_val_clear(&x);
            continue;
        }
        if (kq_emit1(c, v, out, act2(c->fetch, o, w), o, &x, NO_COUNTER, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

/* An observer's step: it only fetches (and a removed leader that resigned leaves its epoch). */
int kq_observer(const Context *c, const View *v, PyObject *out, int o) {
    const Val *me = &v->v[o];
    if (me->role == FOLLOWER && kq_fetch(c, v, out, o) < 0) {
        return -1;
    }
    if (me->role == RESIGNED) { /* _leave_resigned */
        Val x;
        kq_val_copy(&x, me);
        kq_transition(&x, UNATTACHED, me->epoch + 1, NONE);
        return kq_emit1(c, v, out, act1(c->election_timeout, o), o, &x, NO_COUNTER, 0);
    }
    return discover(c, v, out, o);
}
