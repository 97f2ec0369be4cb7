/* The successor function of models/group/model.py, in C: the same steps, in the same order, built from
 * the same NamedTuple types and action labels, for every flag of the model.
 *
 * successors(ctx, state) returns the list GroupModel._successors(state) returns, or None when the
 * state is outside the sizes this code handles (the caller then runs the Python). ctx is the tuple
 * GroupModel._twin_context() builds: the state types, the model's strings, its action-label cache
 * and its configuration as small ints. The leader's assignor is not ported: the C calls the
 * model's _run_assignor (cached by subscriptions) where the Python does. The state is read into C
 * structs, each step works on a copy, and a successor reuses every tuple of the state it did not
 * change. The Python stays the definition; tests compare the two on every reachable state.
 *
 * This file is the module; group.h says which file holds which part of the model.
 */
#include "group.h"

#define N_INTS 25

/* The items of the context (GroupModel._twin_context(), a plain tuple): the seven state types, the
 * six tuples of names (group states, phases, errors, apis, delays, action names), then these. */
enum { CTX_TYPES, CTX_NAMES = CTX_TYPES + 7, CTX_ACTIONS = CTX_NAMES + 6, CTX_ACT, CTX_RUN_ASSIGNOR, CTX_INTS,
       CTX_SIZE };

static int read_context(PyObject *ctx, Context *c) {
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != CTX_SIZE) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state): ctx is not GroupModel's context");
        return -1;
    }
    PyTypeObject **types[7] = {&c->state_type,    &c->group_type,   &c->member_type,  &c->stored_type,
                               &c->consumer_type, &c->request_type, &c->response_type};
    for (int i = 0; i < 7; i++) {
        PyObject *t = PyTuple_GET_ITEM(ctx, CTX_TYPES + i);
        if (!PyType_Check(t) || !PyType_IsSubtype((PyTypeObject *)t, &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the context's types must be tuple types");
            return -1;
        }
        *types[i] = (PyTypeObject *)t;
    }
    PyObject **names[6] = {&c->group_states, &c->phases, &c->errors, &c->apis, &c->delays, &c->action_names};
    Py_ssize_t sizes[6] = {N_GROUP_STATES, N_PHASES, N_ERRORS, N_APIS, N_DELAYS, N_ACTIONS};
    for (int i = 0; i < 6; i++) {
        *names[i] = PyTuple_GET_ITEM(ctx, CTX_NAMES + i);
        if (!PyTuple_Check(*names[i]) || PyTuple_GET_SIZE(*names[i]) != sizes[i]) {
            PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the context's names are not the model's");
            return -1;
        }
    }
    c->no_member = PyTuple_GET_ITEM(c->delays, DELAY_NONE);
    c->actions = PyTuple_GET_ITEM(ctx, CTX_ACTIONS);
    c->act = PyTuple_GET_ITEM(ctx, CTX_ACT);
    c->run_assignor = PyTuple_GET_ITEM(ctx, CTX_RUN_ASSIGNOR);
    PyObject *ints = PyTuple_GET_ITEM(ctx, CTX_INTS);
    if (!PyDict_Check(c->actions) || !PyTuple_Check(ints) || PyTuple_GET_SIZE(ints) != N_INTS) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the context is not GroupModel's");
        return -1;
    }
    int *fields[N_INTS] = {&c->consumers,
                           &c->cooperative,
                           &c->sticky,
                           &c->claims_generation,
                           &c->claimless_generation_matters,
                           &c->static_membership,
                           &c->require_known_member_id,
                           &c->new_member_join_timeout,
                           &c->pending_members_block_join,
                           &c->join_group_v0,
                           &c->v0_rebalance_timeout,
                           &c->initial_rebalance_delay,
                           &c->delay_extensions,
                           &c->delayed_sync,
                           &c->rebalance_static_rejoin_in_completing,
                           &c->join_prepare_after_reset,
                           &c->sync_rebalance_resets_generation,
                           &c->fence_replaced_static_member,
                           &c->persist_static_replacement,
                           &c->timeouts_any,
                           &c->max_faults,
                           &c->coordinator_failover,
                           &c->slow_coordinator,
                           &c->consumer_pauses,
                           &c->poll_stalls};
    for (int i = 0; i < N_INTS; i++) {
        long v = PyLong_AsLong(PyTuple_GET_ITEM(ints, i));
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        *fields[i] = (int)v;
    }
    return 0;
}

static PyObject *empty_tuple;

/* The last context read, kept with a reference to its tuple (whose items it borrows): a search
 * asks with one model's context over and over. */
static PyObject *last_ctx;
static Context last_context;

static const Context *cached_context(PyObject *ctx) {
    if (ctx != last_ctx) {
        Context c;
        if (read_context(ctx, &c) < 0) {
            return NULL;
        }
        c.empty_tuple = empty_tuple;
        Py_INCREF(ctx);
        Py_XSETREF(last_ctx, ctx);
        last_context = c;
    }
    return &last_context;
}

static PyObject *successors(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state) takes two arguments");
        return NULL;
    }
    const Context *context = cached_context(args[0]);
    if (context == NULL) {
        return NULL;
    }
    Context c = *context;
    S s;
    int status = group_read_state(&c, args[1], &s);
    if (status < 0) {
        return NULL;
    }
    if (status > 0 || s.nc > MAX_PROCESSES || c.consumers >= MAX_PROCESSES + 1) {
        Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (int k = 0; k < s.nc && status == 0; k++) {
        status = group_consumer_steps(&c, &s, k, out);
    }
    if (status == 0) {
        S next = s;
        if (s.g.state == DEAD) {
            group_load(&next);
            status = group_emit(&c, &s, out, group_action(&c, A_LOAD, 0, 0, NO_ID, -1), &next);
        } else {
            status = group_coordinator_timers(&c, &s, out);
            if (status == 0 && c.coordinator_failover && s.faults < c.max_faults) {
                group_unload(&next);
                status = group_emit(&c, &s, out, group_action(&c, A_UNLOAD, 0, 0, NO_ID, -1), &next);
            }
        }
    }
    if (status != 0) {
        Py_DECREF(out);
        if (status < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return out;
}

/* The generation at ``index`` of a tuple, into *high when >= 0 and larger; GIVE_UP when it is no int. */
static int see_generation(PyObject *t, Py_ssize_t index, long *high) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) <= index) {
        return GIVE_UP;
    }
    long g;
    int status = tuples_read_long(PyTuple_GET_ITEM(t, index), &g);
    if (status == 0 && g > *high) {
        *high = g;
    }
    return status;
}

/* The metadata generations of a tuple of members (GM_METADATA of each) or of subscriptions (SUB_METADATA). */
static int see_metadata_generations(PyObject *members, Py_ssize_t index, long *high) {
    if (!PyTuple_Check(members)) {
        return GIVE_UP;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members); i++) {
        PyObject *m = PyTuple_GET_ITEM(members, i);
        if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) <= index) {
            return GIVE_UP;
        }
        int status = see_generation(PyTuple_GET_ITEM(m, index), META_GENERATION, high);
        if (status != 0) {
            return status;
        }
    }
    return 0;
}

/* _max_generation(s), read straight off the tuples: within_bounds asks it of every state. */
static int highest_generation_of(const Context *c, PyObject *s, long *high) {
    if (!is_named(s, c->state_type, S_SIZE)) {
        return GIVE_UP;
    }
    PyObject *group = PyTuple_GET_ITEM(s, S_GROUP), *consumers = PyTuple_GET_ITEM(s, S_CONSUMERS);
    int status;
    if (!is_named(group, c->group_type, G_SIZE) || !PyTuple_Check(consumers)) {
        return GIVE_UP;
    }
    if ((status = see_generation(group, G_GENERATION_ID, high)) != 0 ||
        (status = see_metadata_generations(PyTuple_GET_ITEM(group, G_MEMBERS), GM_METADATA, high)) != 0) {
        return status;
    }
    PyObject *stored = PyTuple_GET_ITEM(group, G_STORED);
    if (stored != Py_None) {
        if (!is_named(stored, c->stored_type, SG_SIZE)) {
            return GIVE_UP;
        }
        if ((status = see_generation(stored, SG_GENERATION_ID, high)) != 0 ||
            (status = see_metadata_generations(PyTuple_GET_ITEM(stored, SG_MEMBERS), GM_METADATA, high)) != 0) {
            return status;
        }
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(consumers); k++) {
        PyObject *me = PyTuple_GET_ITEM(consumers, k);
        if (!is_named(me, c->consumer_type, CS_SIZE)) {
            return GIVE_UP;
        }
        if ((status = see_generation(me, CS_GENERATION_ID, high)) != 0 ||
            (status = see_generation(me, CS_ASSIGNED_GENERATION, high)) != 0) {
            return status;
        }
        PyObject *request = PyTuple_GET_ITEM(me, CS_REQUEST), *response = PyTuple_GET_ITEM(me, CS_RESPONSE);
        if (request != Py_None) {
            if (!is_named(request, c->request_type, REQ_SIZE)) {
                return GIVE_UP;
            }
            if ((status = see_generation(request, REQ_GENERATION_ID, high)) != 0 ||
                (status = see_generation(PyTuple_GET_ITEM(request, REQ_METADATA), META_GENERATION, high)) != 0) {
                return status;
            }
        }
        if (response != Py_None) {
            if (!is_named(response, c->response_type, RESP_SIZE)) {
                return GIVE_UP;
            }
            if ((status = see_generation(response, RESP_GENERATION_ID, high)) != 0 ||
                (status = see_metadata_generations(PyTuple_GET_ITEM(response, RESP_MEMBERS), SUB_METADATA, high)) !=
                    0) {
                return status;
            }
        }
    }
    return 0;
}

static PyObject *max_generation(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "max_generation(ctx, state) takes two arguments");
        return NULL;
    }
    const Context *c = cached_context(args[0]);
    if (c == NULL) {
        return NULL;
    }
    long high = -1;
    int status = highest_generation_of(c, args[1], &high);
    if (status < 0) {
        return NULL;
    }
    if (status > 0 || high < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(high);
}

static PyMethodDef methods[] = {
    {"successors", (PyCFunction)(void (*)(void))successors, METH_FASTCALL,
     "successors(ctx, state) -> list of (action, state), or None for a state left to the Python."},
    {"max_generation", (PyCFunction)(void (*)(void))max_generation, METH_FASTCALL,
     "max_generation(ctx, state) -> the highest generation in the state, or None for a state left to the Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_successors", "The group model's successor function, in C.", -1, methods, NULL, NULL, NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__successors(void) {
    group_rank_ids();
    if (empty_tuple == NULL && (empty_tuple = PyTuple_New(0)) == NULL) {
        return NULL;
    }
    return PyModule_Create(&module);
}
