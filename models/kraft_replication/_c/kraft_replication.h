/* The kraft-replication model's C successor function, shared between its files: the sizes it handles,
 * the model's strings and actions as numbers (the state's fields are fields.h's), the context
 * (fast.twin_context()), the C view of a state, and the functions one file offers the others.
 *
 *   successors.c  the module: successors, every step in _successors' order, the context
 *   read.c        a state's tuples into the view
 *   state.c       building tuples, the HW, _update and its ghosts, epoch ranking, and the calls
 *                 into the model's Python
 *   leader.c      the leader: Produce, ShrinkIsr, ExpandIsr, HandleFetch
 *   follower.c    the followers: SendFetch, HandleFetchResponse, truncation
 *   controller.c  metadata, crashes, fencing, AlterPartition
 */
#ifndef KMC_KRAFT_REPLICATION_H
#define KMC_KRAFT_REPLICATION_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fields.h"
#include "tuples.h"

#define MAX_BROKERS 8
#define MAX_LOG 16
#define NO_LEADER (-1)
#define UNDEFINED (-1)
#define AWAITING_METADATA (-1)

/* The plain tuples of the state and of a step, which are not NamedTuples (and so not in fields.h):
 * a pair of ints -- a leader's follower state (logEndOffset, brokerEpoch), a KIP-903 brokerEpochs
 * entry (brokerId, brokerEpoch), a FetchResponse's divergingEpoch (epoch, endOffset) -- and a step
 * (action, state). */
enum { PAIR_FIRST, PAIR_SECOND, PAIR_SIZE };
enum { STEP_ACTION, STEP_STATE, STEP_SIZE };

enum { ERR_NONE, ERR_NOT_LEADER_OR_FOLLOWER, ERR_FENCED_LEADER_EPOCH, ERR_UNKNOWN_LEADER_EPOCH, ERR_DIVERGING_EPOCH,
       ERR_OFFSET_OUT_OF_RANGE, STR_FETCHING, STR_TRUNCATING, N_STRINGS };
enum { ACKS_0, ACKS_1, ACKS_ALL };
enum { CRASH_POWER, CRASH_PROCESS, CRASH_DISK };
enum { TRUNC_HW, TRUNC_OFFSETS_FOR_LEADER_EPOCH, TRUNC_DIVERGING_EPOCH };
enum { MSG_NONE, MSG_FETCH_REQUEST, MSG_FETCH_RESPONSE, MSG_OFLE_REQUEST, MSG_OFLE_RESPONSE };

/* The Python methods called for the rare controller steps. */
enum { CB_HANDLE_ALTER_PARTITION, CB_CONTROLLED_SHUTDOWN, CB_RESTART, CB_UNFENCE, CB_FENCE, CB_CONTROLLER_FAILOVER,
       CB_REASSIGNMENTS, CB_HANDLE_OFLE, CB_HANDLE_OFLE_RESPONSE, CB_APPLY_METADATA, N_CALLBACKS };
enum { A_PRODUCE, A_SEND_FETCH, A_HANDLE_FETCH, A_HANDLE_FETCH_RESPONSE, A_SEND_OFLE, A_SHRINK_ISR, A_EXPAND_ISR,
       A_APPLY_METADATA, A_CRASH, A_UNFENCE, A_FENCE, A_HANDLE_ALTER_PARTITION, N_TABLES };
enum { I_BROKERS, I_MIN_ISR, I_ACKS, I_MAX_RECORDS, I_MAX_CRASHES, I_MAX_FENCES, I_MAX_SHUTDOWNS, I_CRASH,
       I_TRUNCATION, I_FETCH_FENCING, I_MAXIMAL_ISR, I_ISR_EXPAND_LESO, I_ISR_BROKER_EPOCH, I_HW_MIN_ISR,
       I_DIVERGING_FETCH_NOT_COUNTED, I_MAX_CONTROLLER_FAILOVERS, I_MAX_REASSIGNMENTS, I_AWAITS_METADATA, N_INTS };
#define N_TYPES 8
#define CTX_SIZE 16

/* The context, unpacked. */
typedef struct {
    PyTypeObject *state_type, *replica_type, *record_type, *alter_partition_type, *fetch_request_type,
        *fetch_response_type, *ofle_request_type, *ofle_response_type;
    PyObject *strings[N_STRINGS];
    PyObject *unknown_followers, *changes, *dense, *unfence_key, *fence_key, *commit_key;
    PyObject *callbacks[N_CALLBACKS];
    PyObject *tables[N_TABLES];
    long ints[N_INTS];
} Context;

/* A replica, read out of the state once. */
typedef struct {
    PyObject *obj, *log, *isr_obj;
    int running, hosted, truncating, has_pending, nassignment;
    Py_ssize_t len;
    long id[MAX_LOG], epoch[MAX_LOG];
    long brokerEpoch, hw, leader, leaderEpoch, partitionEpoch, pending_sentTo;
    unsigned isr, pending_isr, assignment_mask;
    long fs_leo[MAX_BROKERS], fs_epoch[MAX_BROKERS];
    int assignment[MAX_BROKERS];
} Rep;

typedef struct {
    PyObject *obj;
    int kind;
    long leader;
} Msg;

typedef struct {
    PyObject *state, *controller, *replicas, *fetches;
    int n;
    Rep r[MAX_BROKERS];
    Msg m[MAX_BROKERS];
    long c_leader, c_leaderEpoch, c_partitionEpoch, c_brokerEpochs[MAX_BROKERS];
    unsigned c_fenced, c_isr, c_replicas;
    long nextRecordId, crashes, fences, shutdowns, failovers, reassignments;
} View;


static inline int popcount(unsigned mask) {
    int n = 0;
    for (; mask; mask &= mask - 1) {
        n++;
    }
    return n;
}

/* Whether ``value`` is the string ``known`` (the same object, or an equal one after a pickle). */
static inline int is_string(PyObject *value, PyObject *known) {
    return value == known || (PyUnicode_CheckExact(value) && PyUnicode_Compare(value, known) == 0);
}

/* A tuple of ``size`` items of a given type (exact, or any tuple when type is NULL). */
static inline int is_tuple(PyObject *t, PyTypeObject *type, Py_ssize_t size) {
    if (type != NULL ? Py_TYPE(t) != type : !PyTuple_Check(t)) {
        return 0;
    }
    return PyTuple_GET_SIZE(t) == size;
}

/* Copies of a tuple's items (new references), to replace some and build a new tuple of the same type. */
static inline void load(PyObject *t, PyObject **items, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        items[i] = Py_NewRef(PyTuple_GET_ITEM(t, i));
    }
}

static inline void set(PyObject **items, int i, PyObject *value) { Py_XSETREF(items[i], value); }

/* A plain pair of ints into *first and *second: -1 and an exception, 0, or 1 for anything else. */
static inline int read_pair(PyObject *pair, long *first, long *second) {
    if (!is_tuple(pair, NULL, PAIR_SIZE)) {
        return 1;
    }
    int status = tuples_read_long(PyTuple_GET_ITEM(pair, PAIR_FIRST), first);
    return status != 0 ? status : tuples_read_long(PyTuple_GET_ITEM(pair, PAIR_SECOND), second);
}

static inline PyObject *num(long v) { return PyLong_FromLong(v); }

static inline PyObject *act1(const Context *c, int table, long i) { return PyList_GET_ITEM(c->tables[table], i); }
static inline PyObject *act2(const Context *c, int table, long i, long j) {
    return PyList_GET_ITEM(PyList_GET_ITEM(c->tables[table], i), j);
}

/* Only PyInit__successors leaves the shared object. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* read.c */
int kr_read_mask(PyObject *set, int n, unsigned *out);
int kr_read_view(const Context *c, PyObject *s, View *v);
int kr_within_tables(const Context *c, const View *v);

/* state.c (every maker steals the references it is given, and checks them) */
PyObject *kr_mask_set(unsigned mask);
PyObject *kr_pair(PyObject *a, PyObject *b);
PyObject *kr_head(PyObject *log, long k);
PyObject *kr_tail(PyObject *log, long k);
PyObject *kr_with_fetch(const Context *c, const View *v, int f, PyObject *message);
long kr_incremented_hw(const Context *c, int b, long hw, Py_ssize_t leo, unsigned isr, int has_pending,
                       unsigned pending_isr, const long *fs_leo);
void kr_end_offset_for_epoch(Py_ssize_t len, const long *epochs, long requested, long latest, long *epoch,
                             long *end);
PyObject *kr_update(const Context *c, const View *v, int b, PyObject *replica, PyObject **items);
PyObject *kr_update_replica(const Context *c, const View *v, int b, PyObject *replica);
PyObject *kr_replica_with(const Context *c, const Rep *r, int k, const int *fields, PyObject **values);
PyObject *kr_dense(const Context *c, const View *v, PyObject *t);
int kr_call_back(const Context *c, const View *v, PyObject *out, int callback, PyObject **args, size_t nargs,
                 int rank);
int kr_call_broker(const Context *c, const View *v, PyObject *out, int callback, int b);

/* leader.c */
int kr_produce(const Context *c, const View *v, int b, PyObject *out);
int kr_shrink_isr(const Context *c, const View *v, int b, PyObject *out);
int kr_expand_isr(const Context *c, const View *v, int b, PyObject *out);
int kr_handle_fetch(const Context *c, const View *v, int f, PyObject *out);

/* follower.c */
int kr_send_fetch(const Context *c, const View *v, int f, PyObject *out);
int kr_handle_fetch_response(const Context *c, const View *v, int f, PyObject *out);

/* controller.c */
int kr_apply_metadata(const Context *c, const View *v, int b, PyObject *out);
int kr_crash(const Context *c, const View *v, int b, PyObject *out);
int kr_unfence(const Context *c, const View *v, int b, PyObject *out);
int kr_fence(const Context *c, const View *v, int b, PyObject *out);
int kr_handle_alter_partition(const Context *c, const View *v, int b, PyObject *out);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
