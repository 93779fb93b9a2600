"""Two outputs whose sinks have figures(): figures_output refuses every
third event and sends the others; broken_figures_output takes every event
but its figures() returns a negative count, which the bridge logs once and
stops asking for, while the sink goes on."""


class FiguresSink:
    def __init__(self, config):
        self.sent = 0
        self.refused = 0

    def emit(self, event):
        if (self.sent + self.refused + 1) % 3 == 0:
            self.refused += 1
        else:
            self.sent += 1

    def close(self, timeout):
        pass

    def figures(self):
        return {"sent": self.sent, "refused": self.refused}


class BrokenFiguresSink:
    def __init__(self, config):
        self.emitted = 0

    def emit(self, event):
        self.emitted += 1

    def close(self, timeout):
        pass

    def figures(self):
        return {"sent": -self.emitted}


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("figures_output", validate=dict, create_sink=FiguresSink,
                             start_node=None, override=False)
    register_metric_reporter("broken_figures_output", validate=dict,
                             create_sink=BrokenFiguresSink, start_node=None, override=False)
