"""Recording: the recorder (summary, time series, MCAP trace), the MCAP writer, the 3-D replay
and live view; the ROS 2 messages themselves come from :mod:`biped_contact_sim.msgs`."""
