/* The successor function of models/kraft_replication/model.py, in C: the same steps, in the same order,
 * built from the same NamedTuple types and action labels, for every combination of the model's flags.
 *
 * successors(ctx, state) returns the list KraftReplicationModel._successors(state) returns, or None
 * when the state is outside the sizes this code handles (the caller then runs the Python). ctx is the
 * tuple fast.twin_context(model) builds: the state types, the error and fetch-state
 * strings, the action tables, the model's controller-change memo, the Python methods of the rare
 * controller steps (called from here, appending to the same list) and the configuration as small ints.
 * The Python stays the definition; tests compare the two on every reachable state.
 * kraft_replication.h lists the files the steps are in.
 */
#include "kraft_replication.h"

/* Every step, in _successors' order: -1 on an error, 1 for a state left to the Python. */
static int all_steps(const Context *c, const View *v, PyObject *out) {
    int may_crash = v->crashes < c->ints[I_MAX_CRASHES], may_shut_down = v->shutdowns < c->ints[I_MAX_SHUTDOWNS];
    int may_fence = v->fences < c->ints[I_MAX_FENCES], status;
#define STEP(call)                                                                                                 \
    if ((status = (call)) != 0) {                                                                                  \
        return status;                                                                                             \
    }
    for (int b = 0; b < v->n; b++) {
        const Rep *r = &v->r[b];
        int fenced = (v->c_fenced & (1u << b)) != 0;
        if (r->running) {
            if (r->leader == b) {
                STEP(kr_produce(c, v, b, out));
                STEP(kr_shrink_isr(c, v, b, out));
                STEP(kr_expand_isr(c, v, b, out));
                if (r->has_pending && r->pending_sentTo != AWAITING_METADATA) {
                    STEP(kr_handle_alter_partition(c, v, b, out));
                }
            } else if (r->hosted) {
                STEP(kr_send_fetch(c, v, b, out));
            }
            if (v->m[b].kind == MSG_FETCH_RESPONSE) {
                STEP(kr_handle_fetch_response(c, v, b, out));
            } else if (v->m[b].kind == MSG_OFLE_RESPONSE) {
                PyObject *id = num(b);
                if (id == NULL) {
                    return -1;
                }
                PyObject *args[4] = {v->state, id, v->m[b].obj, out};
                status = kr_call_back(c, v, out, CB_HANDLE_OFLE_RESPONSE, args, 4, 0);
                Py_DECREF(id);
                STEP(status);
            }
            STEP(kr_apply_metadata(c, v, b, out));
            if (may_crash) {
                STEP(kr_crash(c, v, b, out));
            }
            if (may_shut_down) {
                STEP(kr_call_broker(c, v, out, CB_CONTROLLED_SHUTDOWN, b));
            }
            if (fenced) {
                STEP(kr_unfence(c, v, b, out));
            }
        } else if (fenced) {
            STEP(kr_call_broker(c, v, out, CB_RESTART, b));
        }
        if (!fenced && (may_fence || !r->running)) {
            STEP(kr_fence(c, v, b, out));
        }
    }
    PyObject *args[2] = {v->state, out};
    if (v->failovers < c->ints[I_MAX_CONTROLLER_FAILOVERS]) {
        STEP(kr_call_back(c, v, out, CB_CONTROLLER_FAILOVER, args, 2, 1));
    }
    if (v->reassignments < c->ints[I_MAX_REASSIGNMENTS]) {
        STEP(kr_call_back(c, v, out, CB_REASSIGNMENTS, args, 2, 1));
    }
    for (int f = 0; f < v->n; f++) {
        if (v->m[f].kind == MSG_FETCH_REQUEST) {
            STEP(kr_handle_fetch(c, v, f, out));
        } else if (v->m[f].kind == MSG_OFLE_REQUEST) {
            PyObject *id = num(f);
            if (id == NULL) {
                return -1;
            }
            PyObject *request_args[5] = {v->state, PyTuple_GET_ITEM(v->m[f].obj, OREQ_LEADER), id, v->m[f].obj, out};
            status = kr_call_back(c, v, out, CB_HANDLE_OFLE, request_args, 5, 0);
            Py_DECREF(id);
            STEP(status);
        }
    }
#undef STEP
    return 0;
}

static int context_error(const char *message) {
    PyErr_Format(PyExc_TypeError, "successors(ctx, state): %s", message);
    return -1;
}

static int read_items(PyObject *t, Py_ssize_t size, PyObject **out) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != size) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        out[i] = PyTuple_GET_ITEM(t, i);
    }
    return 0;
}

static int read_context(PyObject *ctx, Context *c) {
    PyObject *parts[11], *types[N_TYPES];
    if (read_items(ctx, 11, parts) < 0) {
        return context_error("ctx is not KraftReplicationModel's context");
    }
    if (read_items(parts[0], N_TYPES, types) < 0 || read_items(parts[1], N_STRINGS, c->strings) < 0 ||
        read_items(parts[7], N_CALLBACKS, c->callbacks) < 0 || read_items(parts[8], N_TABLES, c->tables) < 0) {
        return context_error("the context's types, strings, callbacks or tables are not tuples of their size");
    }
    PyTypeObject **slots[N_TYPES] = {&c->state_type,          &c->replica_type,        &c->record_type,
                                     &c->alter_partition_type, &c->fetch_request_type, &c->fetch_response_type,
                                     &c->ofle_request_type,    &c->ofle_response_type};
    for (int i = 0; i < N_TYPES; i++) {
        if (!PyType_Check(types[i]) || !PyType_IsSubtype((PyTypeObject *)types[i], &PyTuple_Type)) {
            return context_error("the context's types must be tuple types");
        }
        *slots[i] = (PyTypeObject *)types[i];
    }
    for (int i = 0; i < N_STRINGS; i++) {
        if (!PyUnicode_CheckExact(c->strings[i])) {
            return context_error("the context's strings must be str");
        }
    }
    for (int i = 0; i < N_TABLES; i++) {
        if (!PyList_Check(c->tables[i])) {
            return context_error("the action tables must be lists");
        }
    }
    c->unknown_followers = parts[2];
    c->changes = parts[3];
    c->dense = parts[4];
    c->unfence_key = parts[5];
    c->fence_key = parts[6];
    c->commit_key = parts[10];
    if (!PyTuple_Check(c->unknown_followers) || !PyDict_Check(c->changes)) {
        return context_error("unknown_followers must be a tuple and controller_changes a dict");
    }
    PyObject *ints[N_INTS];
    if (read_items(parts[9], N_INTS, ints) < 0) {
        return context_error("the configuration is not a tuple of its size");
    }
    for (int i = 0; i < N_INTS; i++) {
        c->ints[i] = PyLong_AsLong(ints[i]);
        if (c->ints[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    long n = c->ints[I_BROKERS];
    if (n < 1 || n > MAX_BROKERS || PyTuple_GET_SIZE(c->unknown_followers) != n) {
        return context_error("the number of brokers is out of range");
    }
    for (int i = 0; i < N_TABLES; i++) {
        if (PyList_GET_SIZE(c->tables[i]) != n) {
            return context_error("every action table has a row per broker");
        }
    }
    if (PyList_GET_SIZE(PyList_GET_ITEM(c->tables[A_PRODUCE], 0)) != c->ints[I_MAX_RECORDS] + 1 ||
        PyList_GET_SIZE(PyList_GET_ITEM(c->tables[A_CRASH], 0)) != c->ints[I_MAX_RECORDS] + 1) {
        return context_error("the Produce and BrokerCrash tables go up to max_records");
    }
    return 0;
}

static PyObject *successors(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state) takes two arguments");
        return NULL;
    }
    Context c;
    if (read_context(args[0], &c) < 0) {
        return NULL;
    }
    View v;
    int status = kr_read_view(&c, args[1], &v);
    if (status < 0) {
        return NULL;
    }
    if (status > 0 || !kr_within_tables(&c, &v)) {
        Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    status = all_steps(&c, &v, out);
    if (status != 0) {
        Py_DECREF(out);
        if (status < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"successors", (PyCFunction)(void (*)(void))successors, METH_FASTCALL,
     "successors(ctx, state) -> list of (action, state), or None for a state left to the Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_successors", "The kraft-replication model's successor function, in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__successors(void) { return PyModule_Create(&module); }
