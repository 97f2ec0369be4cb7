/* The group model's C successor function, shared between its files: the sizes it handles, the
 * model's strings and actions as numbers, the context (GroupModel._twin_context()), the C view of a
 * state, and the functions one file offers the others.
 *
 *   successors.c   the module: successors, max_generation, the context
 *   read.c         a state's tuples into the view
 *   build.c        the view back into the model's tuples, and the action labels
 *   state.c        the group's helpers (state.py), and emit
 *   coordinator.c  the coordinator (coordinator.py)
 *   client.c       the consumers (client.py)
 */
#ifndef KMC_GROUP_H
#define KMC_GROUP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "fields.h" /* the state NamedTuples' fields, by position (generated from state.py) */
#include "tuples.h"

#define MAX_PROCESSES 5
#define MAX_MEMBERS 8
#define IDS_PER_CONSUMER 12
#define MAX_IDS (MAX_PROCESSES * IDS_PER_CONSUMER) /* member "c<c>-<n>" is id c * 12 + n */
#define MAX_PARTITIONS 6
#define MAX_PARTITION_MASK (1 << MAX_PARTITIONS)
#define NO_ID (-1)
#define GIVE_UP 1

/* The strings of the model, in the order of the context's tuples. */
enum { EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD, N_GROUP_STATES };
enum { STOPPED, UNJOINED, JOINING, SYNCING, CONSUMING, FENCED, N_PHASES };
enum {
    NONE,
    UNKNOWN_MEMBER_ID,
    ILLEGAL_GENERATION,
    REBALANCE_IN_PROGRESS,
    MEMBER_ID_REQUIRED,
    FENCED_INSTANCE_ID,
    NOT_COORDINATOR,
    COORDINATOR_NOT_AVAILABLE,
    ASSIGNOR_FAILED,
    N_ERRORS
};
enum { JOIN_GROUP, SYNC_GROUP, N_APIS };
enum { DELAY_NONE, DELAY_INITIAL, DELAY_JOIN, N_DELAYS };
enum { CLAIMS_NONE, CLAIMS_CURRENT, CLAIMS_ASSIGNMENT };

/* The plain tuples inside the state, which are not NamedTuples (and so not in fields.h): a
 * subscription's metadata (tuple(sorted(claimed)), generation), a JoinGroup response's member
 * (memberId, groupInstanceId, metadata) and a SyncGroup assignment's entry (memberId, partitions). */
enum { META_CLAIMED, META_GENERATION, META_SIZE };
enum { SUB_MEMBER_ID, SUB_INSTANCE_ID, SUB_METADATA, SUB_SIZE };
enum { ASSIGN_MEMBER_ID, ASSIGN_PARTITIONS, ASSIGN_SIZE };

/* The actions, in the order of the context's name tuple. */
enum {
    A_SEND_JOIN,
    A_HANDLE_JOIN,
    A_HANDLE_SYNC,
    A_RECEIVE_JOIN,
    A_RECEIVE_SYNC,
    A_HEARTBEAT,
    A_OFFSET_COMMIT,
    A_LEAVE,
    A_CRASH,
    A_START,
    A_STALL,
    A_REQUEST_TIMEOUT,
    A_INITIAL_DELAY,
    A_REBALANCE_TIMEOUT,
    A_SYNC_TIMEOUT,
    A_SESSION_TIMEOUT,
    A_PAUSE,
    A_PENDING_TIMEOUT,
    A_NEW_MEMBER_TIMEOUT,
    A_UNLOAD,
    A_LOAD,
    N_ACTIONS
};

typedef struct {
    PyTypeObject *state_type, *group_type, *member_type, *stored_type, *consumer_type, *request_type,
        *response_type;
    PyObject *group_states, *phases, *errors, *apis, *delays, *action_names;
    PyObject *no_member; /* "" */
    PyObject *actions;   /* dict: C key -> Action, filled through act */
    PyObject *act;       /* the model's _act */
    PyObject *run_assignor;
    PyObject *empty_tuple;
    int consumers, cooperative, sticky, claims_generation, claimless_generation_matters, static_membership,
        require_known_member_id, new_member_join_timeout, pending_members_block_join, join_group_v0,
        v0_rebalance_timeout, initial_rebalance_delay, delay_extensions, delayed_sync,
        rebalance_static_rejoin_in_completing, join_prepare_after_reset, sync_rebalance_resets_generation,
        fence_replaced_static_member, persist_static_replacement, timeouts_any, max_faults, coordinator_failover,
        slow_coordinator, consumer_pauses, poll_stalls;
} Context;

typedef struct {
    int id, inst, consumer;
    long incarnation;
    unsigned claimed;
    long claimedGeneration;
    int awaitingJoin, awaitingSync, isNew, connected;
    unsigned assignment;
    PyObject *src; /* the tuple read, or NULL */
} Member;

typedef struct {
    int present, api, id;
    long generationId;
    unsigned claimed;
    long claimedGeneration;
    int nassign;
    int assignId[MAX_MEMBERS];
    unsigned assignMask[MAX_MEMBERS];
    PyObject *src, *assignment_src;
} Req;

typedef struct {
    int present, api, error, id;
    long generationId;
    int leaderId, nmembers;
    int memberId[MAX_MEMBERS], memberInst[MAX_MEMBERS];
    unsigned memberClaimed[MAX_MEMBERS];
    long memberGeneration[MAX_MEMBERS];
    unsigned assignment;
    PyObject *src, *members_src;
} Resp;

typedef struct {
    int phase, id;
    long generationId;
    unsigned owned, assigned;
    Req request;
    Resp response;
    long incarnation;
    int rejoinRequested, stalled;
    long assignedGeneration;
    PyObject *src;
} Cons;

typedef struct {
    long generationId;
    int leaderId, n;
    Member m[MAX_MEMBERS];
    PyObject *src, *members_src;
} Stored;

typedef struct {
    int state;
    long generationId;
    int leaderId, n;
    Member m[MAX_MEMBERS];
    uint64_t pending, pendingSync;
    int joinDelay, newMemberAdded;
    long delayExtensionsLeft;
    int has_stored;
    Stored stored;
    PyObject *src, *members_src, *pending_src, *pending_sync_src;
} Grp;

typedef struct {
    Grp g;
    int nc;
    Cons c[MAX_PROCESSES];
    long faults;
    PyObject *src;
} S;

static inline uint64_t bit(int id) { return id == NO_ID ? 0 : (uint64_t)1 << id; }

static inline int is_named(PyObject *t, PyTypeObject *type, Py_ssize_t size) {
    return Py_TYPE(t) == type && PyTuple_GET_SIZE(t) == size;
}

/* Only PyInit__successors leaves the shared object. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* read.c */
int group_read_id(PyObject *value, int *out);
int group_read_partitions(PyObject *set, unsigned *out);
int group_read_state(const Context *c, PyObject *t, S *s);

/* build.c */
extern int group_id_rank[MAX_IDS]; /* where each id's string sorts among all ids */
void group_rank_ids(void);
int group_eq(const Grp *a, const Grp *b);
PyObject *group_build_response_members(const Context *c, const Resp *r);
PyObject *group_build_state(const Context *c, const S *orig, const S *s);
PyObject *group_action(const Context *c, int kind, int consumer, int error, int id, long generation);

/* state.c */
int group_find_member(const Grp *g, int id);
void group_update_member(Grp *g, const Member *m);
int group_insert_member(Grp *g, const Member *m);
void group_drop_member(Grp *g, int id);
void group_without_member(Grp *g, int id);
void group_store(Grp *g);
int group_holds_id(const Cons *me, int id);
int group_behind(const Cons *me, const Member *m);
void group_error_response(Resp *r, int api, int error);
void group_sync_response(Resp *r, unsigned assignment);
void group_join_response(const Grp *g, int id, Resp *r);
uint64_t group_mentioned_ids(const S *s);
int group_fresh_member_id(int consumer, uint64_t mentioned, int *out);
int group_emit(const Context *c, const S *orig, PyObject *out, PyObject *act, S *next);

/* coordinator.c */
int group_instance_id(const Context *c, int consumer);
int group_member_error(const Grp *g, int id, int inst);
int group_handle_join(const Context *c, S *s, int consumer, int *error);
int group_handle_sync(const Context *c, S *s, int consumer, int *error);
void group_remove_member_and_update_group(const Context *c, S *s, int id);
int group_coordinator_timers(const Context *c, const S *s, PyObject *out);
void group_unload(S *s);
void group_load(S *s);

/* client.c */
int group_consumer_steps(const Context *c, const S *s, int k, PyObject *out);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
