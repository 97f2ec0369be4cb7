/* The bottom of the kraft-quorum model's C successor function: reading a state into the C view of
 * kraft_quorum.h (roles as numbers, sets of replicas as bit masks, each log's record epochs and
 * voter sets), what a step asks of the view (two logs compared; a replica's voter set, the last
 * VotersRecord in its log else the bootstrap set, and who counts in it: state.py's last_voters,
 * voters.py's queries), and building the new tuples back from it: a Voter the step did not change
 * stays the same object. It calls no other file of the twin. */
#include "kraft_quorum.h"

static PyObject *mask_sets[1 << MAX_VOTERS]; /* the frozenset of each voter mask, made once */

static PyObject *mask_set(const Context *c, unsigned mask) {
    if (mask == 0) {
        return Py_NewRef(c->nobody);
    }
    return tuples_mask_set(mask_sets, MAX_VOTERS, mask);
}

/* -- reading the state (-1 and an exception; 0; 1 when the value is not one this code handles) --- */

/* A frozenset of ids in range(n) as a mask. */
static int read_mask(PyObject *set, int n, unsigned *out) {
    if (!PyFrozenSet_CheckExact(set) || PySet_GET_SIZE(set) > n) {
        return 1;
    }
    unsigned mask = 0;
#if PY_VERSION_HEX < 0x030D0000
    Py_ssize_t pos = 0;
    Py_hash_t hash;
    PyObject *key;
    while (_PySet_NextEntry(set, &pos, &key, &hash)) {
        long r;
        int status = tuples_read_long(key, &r);
        if (status != 0) {
            return status;
        }
        if (r < 0 || r >= n) {
            return 1;
        }
        mask |= 1u << r;
    }
#else
    PyObject *iter = PyObject_GetIter(set), *key;
    if (iter == NULL) {
        return -1;
    }
    while ((key = PyIter_Next(iter)) != NULL) {
        long r;
        int status = tuples_read_long(key, &r);
        Py_DECREF(key);
        if (status != 0 || r < 0 || r >= n) {
            Py_DECREF(iter);
            return status != 0 ? status : 1;
        }
        mask |= 1u << r;
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        return -1;
    }
#endif
    *out = mask;
    return 0;
}

/* A ReplicaKey (id, directory id): a plain tuple, not a NamedTuple, so not in fields.h. */
enum { KEY_ID, KEY_DIRECTORY, KEY_SIZE };

/* A key (id, directory id) of a voter set. */
static int read_key(PyObject *key, int n, long *id, long *dir) {
    if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != KEY_SIZE) {
        return 1;
    }
    int status;
    if ((status = tuples_read_long(PyTuple_GET_ITEM(key, KEY_ID), id)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(key, KEY_DIRECTORY), dir)) != 0) {
        return status;
    }
    return *id < 0 || *id >= n ? 1 : 0;
}

/* A VotersRecord's voters: at most one key per replica id, sorted as sorted() sorts the keys. */
static int read_vset(PyObject *set, int n, VSet *out) {
    if (!PyFrozenSet_CheckExact(set) || PySet_GET_SIZE(set) > n) {
        return 1;
    }
    out->k = 0;
    out->ids = 0;
    out->obj = set;
#if PY_VERSION_HEX < 0x030D0000
    Py_ssize_t pos = 0;
    Py_hash_t hash;
    PyObject *key;
    while (_PySet_NextEntry(set, &pos, &key, &hash)) {
#else
    PyObject *iter = PyObject_GetIter(set), *key;
    if (iter == NULL) {
        return -1;
    }
    while ((key = PyIter_Next(iter)) != NULL) {
        Py_DECREF(key); /* the set holds it */
#endif
        long id, dir;
        int status = read_key(key, n, &id, &dir);
        if (status == 0 && (out->ids & (1u << id))) {
            status = 1;
        }
        if (status != 0) {
#if PY_VERSION_HEX >= 0x030D0000
            Py_DECREF(iter);
#endif
            return status;
        }
        int j = out->k++;
        while (j > 0 && out->id[j - 1] > id) {
            out->id[j] = out->id[j - 1];
            out->dir[j] = out->dir[j - 1];
            j--;
        }
        out->id[j] = id;
        out->dir[j] = dir;
        out->ids |= 1u << id;
    }
#if PY_VERSION_HEX >= 0x030D0000
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        return -1;
    }
#endif
    return 0;
}

static int read_role(const Context *c, PyObject *value, int *out) {
    for (int i = 0; i < ROLE_COUNT; i++) {
        if (value == c->roles[i]) {
            *out = i;
            return 0;
        }
    }
    if (!PyUnicode_CheckExact(value)) {
        return 1;
    }
    for (int i = 0; i < ROLE_COUNT; i++) {
        int eq = PyUnicode_Compare(value, c->roles[i]);
        if (eq == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (eq == 0) {
            *out = i;
            return 0;
        }
    }
    return 1;
}

static int read_voter(const Context *c, PyObject *obj, int n, Sets *sets, Val *x) {
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != V_SIZE) {
        return 1;
    }
    int status;
    if ((status = read_role(c, PyTuple_GET_ITEM(obj, V_ROLE), &x->role)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, V_EPOCH), &x->epoch)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, V_VOTED_ID), &x->votedId)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, V_LEADER_ID), &x->leaderId)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, V_HIGH_WATERMARK), &x->hw)) != 0 ||
        (status = read_mask(PyTuple_GET_ITEM(obj, V_VOTES), n, &x->votes)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(obj, V_HAS_FETCHED), &x->hasFetched)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(obj, V_HW_KNOWN), &x->hwKnown)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, V_DIRECTORY_ID), &x->directoryId)) != 0) {
        return status;
    }
    if (x->votedId < NONE || x->votedId >= n || x->leaderId < NONE || x->leaderId >= n || x->hw < 0) {
        return 1;
    }
    if (x->role == FOLLOWER && x->leaderId == NONE) {
        return 1;
    }
    x->log = PyTuple_GET_ITEM(obj, V_LOG);
    if (!PyTuple_Check(x->log) || PyTuple_GET_SIZE(x->log) >= MAX_LOG) {
        return 1;
    }
    x->len = PyTuple_GET_SIZE(x->log);
    for (Py_ssize_t i = 0; i < x->len; i++) {
        PyObject *record = PyTuple_GET_ITEM(x->log, i);
        if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) < REC_SIZE || PyTuple_GET_SIZE(record) > VR_SIZE) {
            return 1;
        }
        if ((status = tuples_read_long(PyTuple_GET_ITEM(record, REC_EPOCH), &x->rec[i])) != 0) {
            return status;
        }
        x->rvs[i] = NULL;
        if (PyTuple_GET_SIZE(record) == VR_SIZE) { /* a VotersRecord: only a dynamic voter set has them */
            PyObject *set = PyTuple_GET_ITEM(record, VR_VOTERS);
            if (c->static_voters) {
                return 1;
            }
            int known = 0;
            for (int k = 0; k < sets->count && !known; k++) {
                known = sets->set[k].obj == set;
            }
            if (!known) {
                if (sets->count == MAX_SETS) {
                    return 1;
                }
                if ((status = read_vset(set, n, &sets->set[sets->count])) != 0) {
                    return status;
                }
                sets->count++;
            }
            x->rvs[i] = set;
        }
    }
    x->offs_obj = PyTuple_GET_ITEM(obj, V_END_OFFSETS);
    if (!PyTuple_Check(x->offs_obj)) {
        return 1;
    }
    x->noff = (int)PyTuple_GET_SIZE(x->offs_obj);
    if (x->noff != 0 && x->noff != n) {
        return 1;
    }
    for (int i = 0; i < x->noff; i++) {
        if ((status = tuples_read_long(PyTuple_GET_ITEM(x->offs_obj, i), &x->off[i])) != 0) {
            return status;
        }
        if (x->off[i] < 0 || x->off[i] > x->len) {
            return 1;
        }
    }
    if (x->role == LEADER && x->noff != n) {
        return 1;
    }
    x->votes_obj = PyTuple_GET_ITEM(obj, V_VOTES);
    x->dir_obj = PyTuple_GET_ITEM(obj, V_DIRECTORY_ID);
    x->orig = obj;
    return 0;
}

int kq_read_view(const Context *c, PyObject *s, View *v) {
    if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != S_SIZE) {
        return 1;
    }
    v->state = s;
    v->voters = PyTuple_GET_ITEM(s, S_VOTERS);
    if (!PyTuple_Check(v->voters) || PyTuple_GET_SIZE(v->voters) != c->n || c->n > MAX_VOTERS) {
        return 1;
    }
    v->n = (int)c->n;
    v->sets->count = 0;
    int status;
    for (int i = 0; i < v->n; i++) {
        if ((status = read_voter(c, PyTuple_GET_ITEM(v->voters, i), v->n, v->sets, &v->v[i])) != 0) {
            return status;
        }
    }
    v->committed = PyTuple_GET_ITEM(s, S_COMMITTED);
    if (!PyTuple_Check(v->committed)) {
        return 1;
    }
    if ((status = read_mask(PyTuple_GET_ITEM(s, S_ISOLATED), v->n, &v->isolated)) != 0 ||
        (status = read_mask(PyTuple_GET_ITEM(s, S_HOPELESS), v->n, &v->hopeless)) != 0) {
        return status;
    }
    for (int i = S_WRITES; i <= S_DISK_LOSSES; i++) {
        if ((status = tuples_read_long(PyTuple_GET_ITEM(s, i), &v->counters[i])) != 0) {
            return status;
        }
    }
    return 0;
}

/* -- the view's queries: two logs compared, a replica's voter set and who counts in it ----------- */

/* (last epoch, end offset) of a log, compared as the Python compares the pair. */
int kq_last_cmp(const Val *a, const Val *b) {
    long ae = a->len ? a->rec[a->len - 1] : 0, be = b->len ? b->rec[b->len - 1] : 0;
    if (ae != be) {
        return ae < be ? -1 : 1;
    }
    return a->len < b->len ? -1 : a->len > b->len;
}

/* last_voters_offset: the offset of the last VotersRecord, or -1. */
long kq_last_voters_offset(const Val *x) {
    for (Py_ssize_t i = x->len - 1; i >= 0; i--) {
        if (x->rvs[i] != NULL) {
            return (long)i;
        }
    }
    return -1;
}

/* voters_of: the last VotersRecord in the replica's log, else the bootstrap set. */
const VSet *kq_voters_of(const Context *c, const View *v, const Val *x) {
    long i = c->static_voters ? -1 : kq_last_voters_offset(x);
    if (i >= 0) {
        for (int k = 0; k < v->sets->count; k++) {
            if (v->sets->set[k].obj == x->rvs[i]) {
                return &v->sets->set[k];
            }
        }
    }
    return &c->bootstrap;
}

/* The voter set holds the key (id, dir): replica ``id`` with that very directory. */
int kq_holds_key(const VSet *vs, long id, long dir) {
    for (int k = 0; k < vs->k; k++) {
        if (vs->id[k] == id) {
            return vs->dir[k] == dir;
        }
    }
    return 0;
}

/* is_voter: the replica's own key is in its voter set. */
int kq_is_voter(const Context *c, const View *v, int w, const Val *x) {
    return c->is_static || kq_holds_key(kq_voters_of(c, v, x), w, x->directoryId);
}

/* majority_of: a majority of the replica's voter set. */
long kq_majority_of(const Context *c, const View *v, const Val *x) {
    return c->static_voters ? c->majority : kq_voters_of(c, v, x)->k / 2 + 1;
}

/* counts_fetch: the leader records the fetch as a voter's or an observer's. */
int kq_counts_fetch(const Context *c, const View *v, const Val *leader, int f, const Val *follower) {
    if (c->is_static) {
        return 1;
    }
    const VSet *vs = kq_voters_of(c, v, leader);
    return kq_holds_key(vs, f, follower->directoryId) || !(vs->ids & (1u << f));
}

/* -- values -------------------------------------------------------------------------------------- */

void kq_val_copy(Val *x, const Val *from) {
    *x = *from;
    Py_INCREF(x->log);
    Py_XINCREF(x->votes_obj);
    Py_XINCREF(x->offs_obj);
    Py_INCREF(x->dir_obj);
}

void kq_val_clear(Val *x) {
    Py_CLEAR(x->log);
    Py_CLEAR(x->votes_obj);
    Py_CLEAR(x->offs_obj);
    Py_CLEAR(x->dir_obj);
}

void kq_set_votes(Val *x, unsigned votes) {
    if (votes != x->votes) {
        x->votes = votes;
        Py_CLEAR(x->votes_obj);
        x->orig = NULL;
    }
}

void kq_set_offsets_empty(Val *x) {
    if (x->noff != 0) {
        x->noff = 0;
        Py_CLEAR(x->offs_obj);
        x->orig = NULL;
    }
}

void kq_set_offset(Val *x, int i, long offset) {
    if (x->off[i] != offset) {
        x->off[i] = offset;
        Py_CLEAR(x->offs_obj);
        x->orig = NULL;
    }
}

/* Replaces the log (stolen; NULL: an error, kept as NULL for val_build to report). */
void kq_set_log(Val *x, PyObject *log) {
    Py_XSETREF(x->log, log);
    x->orig = NULL;
}

static PyObject *offsets_tuple(const Val *x) {
    PyObject *t = PyTuple_New(x->noff);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < x->noff; i++) {
        PyObject *o = PyLong_FromLong(x->off[i]);
        if (o == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

/* The Voter a Val stands for (a new reference). */
static PyObject *val_build(const Context *c, const Val *x) {
    if (x->orig != NULL) {
        return Py_NewRef(x->orig);
    }
    if (x->log == NULL) {
        return NULL;
    }
    PyObject *items[V_SIZE] = {
        [V_ROLE] = Py_NewRef(c->roles[x->role]),
        [V_EPOCH] = PyLong_FromLong(x->epoch),
        [V_VOTED_ID] = PyLong_FromLong(x->votedId),
        [V_LEADER_ID] = PyLong_FromLong(x->leaderId),
        [V_LOG] = Py_NewRef(x->log),
        [V_HIGH_WATERMARK] = PyLong_FromLong(x->hw),
        [V_VOTES] = x->votes_obj != NULL ? Py_NewRef(x->votes_obj) : mask_set(c, x->votes),
        [V_END_OFFSETS] = x->offs_obj != NULL ? Py_NewRef(x->offs_obj) : offsets_tuple(x),
        [V_HAS_FETCHED] = PyBool_FromLong(x->hasFetched),
        [V_HW_KNOWN] = PyBool_FromLong(x->hwKnown),
        [V_DIRECTORY_ID] = Py_NewRef(x->dir_obj),
    };
    return tuples_new_named(c->voter_type, V_SIZE, items);
}

PyObject *kq_append_record(const Context *c, PyObject *log, long epoch, PyObject *kind) {
    PyObject *items[REC_SIZE] = {[REC_EPOCH] = PyLong_FromLong(epoch), [REC_KIND] = Py_NewRef(kind)};
    return tuples_append(log, tuples_new_named(c->record_type, REC_SIZE, items));
}

/* -- the next state ------------------------------------------------------------------------------ */

/* _set: the state with these voters replaced, the committed history extended and the hopeless
 * Candidates updated; ``delta`` added to the counter field ``counter`` (S_WRITES...; NO_COUNTER: none). */
PyObject *kq_next_state(const Context *c, const View *v, const Change *changes, int count, int counter,
                        long delta) {
    const Val *now[MAX_VOTERS];
    for (int i = 0; i < v->n; i++) {
        now[i] = &v->v[i];
    }
    int stood = -1;
    PyObject *voters = PyTuple_New(v->n);
    PyObject *committed = Py_NewRef(v->committed);
    if (voters == NULL) {
        Py_DECREF(committed);
        return NULL;
    }
    for (int k = 0; k < count; k++) {
        const Val *x = changes[k].x;
        int i = changes[k].i;
        now[i] = x;
        Py_ssize_t clen = PyTuple_GET_SIZE(committed);
        if (x->role == LEADER && x->hw > clen) {
            PyObject *more = PyTuple_New(x->hw);
            if (more == NULL || x->log == NULL) {
                Py_XDECREF(more);
                goto error;
            }
            for (Py_ssize_t o = 0; o < x->hw; o++) {
                PyObject *item;
                if (o < clen) {
                    item = Py_NewRef(PyTuple_GET_ITEM(committed, o));
                } else {
                    PyObject *items[CM_SIZE] = {
                        [CM_EPOCH] = Py_NewRef(PyTuple_GET_ITEM(PyTuple_GET_ITEM(x->log, o), REC_EPOCH)),
                        [CM_COMMIT_EPOCH] = PyLong_FromLong(x->epoch),
                    };
                    item = tuples_new_named(c->committed_type, CM_SIZE, items);
                    if (item == NULL) {
                        Py_DECREF(more);
                        goto error;
                    }
                }
                PyTuple_SET_ITEM(more, o, item);
            }
            Py_SETREF(committed, more);
        } else if (x->role == CANDIDATE && (v->v[i].role != CANDIDATE || v->v[i].epoch != x->epoch)) {
            stood = i;
        }
    }
    for (int i = 0; i < v->n; i++) {
        PyObject *voter = now[i] == &v->v[i] ? Py_NewRef(PyTuple_GET_ITEM(v->voters, i)) : val_build(c, now[i]);
        if (voter == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(voters, i, voter);
    }
    PyObject *s = v->state;
    PyObject *hopeless;
    if (!v->hopeless && stood < 0) {
        hopeless = Py_NewRef(PyTuple_GET_ITEM(s, S_HOPELESS));
    } else {
        unsigned mask = 0;
        for (int i = 0; i < v->n; i++) {
            if ((v->hopeless & (1u << i)) && now[i]->role == CANDIDATE && now[i]->epoch == v->v[i].epoch) {
                mask |= 1u << i;
            }
        }
        if (stood >= 0) { /* could_win: a majority of its voter set can reach it and holds a log no newer */
            const VSet *vs = kq_voters_of(c, v, now[stood]);
            int electors = 0;
            for (int k = 0; k < vs->k; k++) {
                int w = (int)vs->id[k];
                if (now[w]->directoryId == vs->dir[k] && connected(v->isolated, stood, w)) {
                    electors += kq_last_cmp(now[w], now[stood]) <= 0;
                }
            }
            if (electors < vs->k / 2 + 1) {
                mask |= 1u << stood;
            }
        }
        hopeless = mask_set(c, mask);
    }
    PyObject *items[S_SIZE] = {
        [S_VOTERS] = voters,
        [S_ISOLATED] = Py_NewRef(PyTuple_GET_ITEM(s, S_ISOLATED)),
        [S_COMMITTED] = committed,
        [S_HOPELESS] = hopeless,
    };
    for (int i = S_WRITES; i <= S_DISK_LOSSES; i++) {
        items[i] = i == counter ? PyLong_FromLong(v->counters[i] + delta) : Py_NewRef(PyTuple_GET_ITEM(s, i));
    }
    return tuples_new_named(c->state_type, S_SIZE, items);
error:
    Py_DECREF(voters);
    Py_DECREF(committed);
    return NULL;
}

/* One voter replaced, then the step emitted; x is cleared. */
int kq_emit1(const Context *c, const View *v, PyObject *out, PyObject *action, int i, Val *x, int counter,
             long delta) {
    Change change = {i, x};
    int status = tuples_emit(out, action, kq_next_state(c, v, &change, 1, counter, delta));
    kq_val_clear(x);
    return status;
}

/* The state with another set of isolated replicas (Isolate, Heal), ``partitions`` more partitions. */
PyObject *kq_with_isolated(const Context *c, const View *v, unsigned isolated, long partitions) {
    PyObject *s = v->state;
    PyObject *items[S_SIZE];
    for (int i = 0; i < S_SIZE; i++) {
        items[i] = Py_NewRef(PyTuple_GET_ITEM(s, i));
    }
    Py_SETREF(items[S_ISOLATED], mask_set(c, isolated));
    if (partitions) {
        Py_SETREF(items[S_PARTITIONS], PyLong_FromLong(v->counters[S_PARTITIONS] + partitions));
    }
    return tuples_new_named(c->state_type, S_SIZE, items);
}
