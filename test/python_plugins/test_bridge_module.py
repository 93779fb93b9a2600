"""test_bridge_module.py — the Python half of python.so on its own: what
counts as plain JSON for validate and start_node results, a sink's
figures() as the bridge reads them, the read-only MetricEvent, and
register_metric_reporter outside a register() call.

Environment: TSM_PYTHON_BRIDGE_DIR (plugins/python/python in the source tree).
"""
import os
import socket
import sys
import types
import unittest

sys.path.insert(0, os.environ["TSM_PYTHON_BRIDGE_DIR"])
import _tokenspeed_metrics_bridge as bridge  # noqa: E402


class PlainJson(unittest.TestCase):

    def test_plain_data_is_copied_as_compact_json(self):
        self.assertEqual(bridge.plain_json({"a": [1, 2.5, None, True, ("x",)], "b": {"c": "d"}},
                                           "validate() result"),
                         '{"a":[1,2.5,null,true,["x"]],"b":{"c":"d"}}')

    def test_a_result_that_is_not_an_object_is_refused(self):
        with self.assertRaisesRegex(ValueError, "validate\\(\\) result is a list, not a JSON object"):
            bridge.plain_json([1], "validate() result")

    def test_a_live_object_is_refused_with_where_it_is(self):
        with socket.socket() as live:
            with self.assertRaisesRegex(ValueError, r"producer_config\['conn'\]\[0\] is a live "
                                                    r"object \(socket\.socket\)"):
                bridge.plain_json({"conn": [live]}, "producer_config")

    def test_nan_and_non_string_keys_are_refused(self):
        with self.assertRaisesRegex(ValueError, "not a JSON number"):
            bridge.plain_json({"a": float("inf")}, "producer_config")
        with self.assertRaisesRegex(ValueError, "not a string"):
            bridge.plain_json({1: "a"}, "producer_config")


class Figures(unittest.TestCase):
    """A sink's figures() as the bridge reads it."""

    class Sink:
        def __init__(self, figures):
            self._figures = figures

        def figures(self):
            return self._figures

    def test_a_sink_without_figures_has_no_reader(self):
        self.assertIsNone(bridge.figures_reader(object()))

    def test_the_counts_come_in_order_and_a_missing_one_is_zero(self):
        read = bridge.figures_reader(self.Sink({"sent": 7, "lost": 2, "pending": 1}))
        self.assertEqual(read(), (7, 0, 2, 0, 1))

    def test_what_is_not_a_mapping_of_counts_is_refused_saying_what(self):
        for figures, error in (([1, 2], "returned list, not a mapping"),
                               ({"sent": 1, "delivered": 2}, "unknown keys delivered"),
                               ({"sent": -1}, r"figures\(\)\['sent'\] is -1, not a count"),
                               ({"lost": 1.5}, r"\['lost'\] is 1.5"),
                               ({"refused": True}, r"\['refused'\] is True"),
                               ({"retries": 2**64}, r"\['retries'\] is")):
            with self.assertRaisesRegex((TypeError, ValueError), error):
                bridge.figures_reader(self.Sink(figures))()


class Events(unittest.TestCase):

    def test_the_event_and_its_labels_are_read_only(self):
        event = tuple.__new__(bridge.MetricEvent,  # as python.so builds it
                              (1, "m_total", "inc", 2.0, types.MappingProxyType({"a": "b"}), 1))
        self.assertEqual((event.metric, event.value, event.weight, dict(event.labels)),
                         ("m_total", 2.0, 1, {"a": "b"}))
        with self.assertRaises(AttributeError):
            event.value = 3.0
        with self.assertRaises(TypeError):
            event.labels["a"] = "c"


class Registry(unittest.TestCase):

    def test_register_metric_reporter_outside_register_is_refused(self):
        with self.assertRaisesRegex(RuntimeError, "only from a plugin's register"):
            bridge.registry.register_metric_reporter("x", validate=dict, create_sink=dict,
                                                     start_node=None)

    def test_the_api_version_is_1(self):
        self.assertEqual(bridge.registry.METRIC_REPORTER_API_VERSION, 1)


if __name__ == "__main__":
    unittest.main()
